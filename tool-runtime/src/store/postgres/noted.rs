//! A write's notifications as the columns of one statement: what the
//! statement of a change (an insert, a decision) and a transaction's own
//! write of them both unnest.

use tokio_postgres::types::ToSql;

use crate::store::Noted;

/// A write's notifications as the columns a statement unnests: what a
/// change's own statement writes them with, in one round trip.
pub(super) struct NotedColumns<'a> {
    ids: Vec<&'a str>,
    at_ms: Vec<i64>,
    call_ids: Vec<&'a str>,
    tool_ids: Vec<&'a str>,
    kinds: Vec<&'static str>,
    data: &'a [String],
}

impl<'a> NotedColumns<'a> {
    /// The columns of `noted`; `None` when there is no notification.
    pub(super) fn of((notifications, texts): &'a Noted) -> Option<Self> {
        if notifications.is_empty() {
            return None;
        }
        Some(NotedColumns {
            ids: notifications.iter().map(|n| n.id.as_str()).collect(),
            at_ms: notifications
                .iter()
                .map(|n| i64::try_from(n.at_ms).unwrap_or(i64::MAX))
                .collect(),
            call_ids: notifications.iter().map(|n| n.call_id.as_str()).collect(),
            tool_ids: notifications.iter().map(|n| n.tool_id.as_str()).collect(),
            kinds: notifications.iter().map(|n| n.kind.as_str()).collect(),
            data: texts,
        })
    }

    /// The CTE `noted` writing them, its parameters numbered from `first`
    /// (as [`params`](Self::params) gives them); only when the CTE named
    /// `guard` has a row (the change applied), unless `guard` is empty.
    pub(super) fn cte(&self, first: usize, guard: &str) -> String {
        let p = |n: usize| first + n;
        let when = match guard {
            "" => String::new(),
            guard => format!("WHERE EXISTS (SELECT 1 FROM {guard})"),
        };
        format!(
            "noted AS (INSERT INTO tool_runtime_outbox
                 (id, at_ms, call_id, tool_id, kind, data, state, next_at)
             SELECT id, at_ms, call_id, tool_id, kind, data, 'waiting', at_ms
             FROM unnest(${}::text[], ${}::bigint[], ${}::text[], ${}::text[], ${}::text[], ${}::text[])
                 WITH ORDINALITY AS n(id, at_ms, call_id, tool_id, kind, data, ord)
             {when} ORDER BY ord)",
            p(0),
            p(1),
            p(2),
            p(3),
            p(4),
            p(5)
        )
    }

    /// The parameters of [`cte`](Self::cte), in its order.
    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 6] {
        [
            &self.ids,
            &self.at_ms,
            &self.call_ids,
            &self.tool_ids,
            &self.kinds,
            &self.data,
        ]
    }
}
