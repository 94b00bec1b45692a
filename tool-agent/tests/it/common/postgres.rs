//! A PostgreSQL store in a schema of its own, when `DATABASE_URL` is set
//! (`REQUIRE_POSTGRES=1` makes its absence a failure).

use tool_runtime::store::PostgresStore;

/// The schema a test's store lives in: dropped by [`Schema::drop`].
pub struct Schema {
    admin: tokio_postgres::Client,
    name: String,
}

impl Schema {
    pub async fn drop(self) {
        self.admin
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name))
            .await
            .unwrap();
    }
}

/// A store over a new schema named after `label` and this process, or
/// `None` (said on stderr) when no database is configured.
pub async fn store(label: &str) -> Option<(PostgresStore, Schema)> {
    let url = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert_ne!(
                std::env::var("REQUIRE_POSTGRES").as_deref(),
                Ok("1"),
                "REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
            );
            eprintln!("skipping the PostgreSQL case: DATABASE_URL is not set");
            return None;
        }
    };
    // A schema of its own: the store's tables are per schema.
    let name = format!("t_agent_{label}_{}", std::process::id());
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
        ))
        .await
        .unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = PostgresStore::connect(&format!("{url}{separator}options=-csearch_path%3D{name}"))
        .await
        .unwrap();
    Some((store, Schema { admin, name }))
}
