//! `effects::Once`: an effect in PostgreSQL keyed by an idempotency key
//! happens once, whatever runs it again (`DATABASE_URL`; skipped without,
//! unless `REQUIRE_POSTGRES=1`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio_postgres::{Client, NoTls};
use tool_restate::effects::Once;

/// A client of the test database, or `None` (with a notice).
pub async fn connect() -> Option<Client> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        assert!(
            std::env::var("REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "REQUIRE_POSTGRES=1 but DATABASE_URL is not set"
        );
        eprintln!("skipping: DATABASE_URL is not set");
        return None;
    };
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    Some(client)
}

/// A name no earlier run used.
pub fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("time")
        .as_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// An account with 100 in a table of its own; its name.
pub async fn account(client: &Client) -> String {
    let table = unique("accounts");
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (id int PRIMARY KEY, balance int NOT NULL); INSERT INTO {table} VALUES (1, 100)"
        ))
        .await
        .expect("account");
    table
}

pub async fn balance(client: &Client, table: &str) -> i32 {
    client
        .query_one(&format!("SELECT balance FROM {table} WHERE id = 1"), &[])
        .await
        .expect("balance")
        .get(0)
}

/// Takes 5 from the account, once per `key`: the result recorded.
pub async fn take_five(client: &mut Client, table: &str, key: &str) -> Value {
    match Once::<Value>::begin(client, key).await.expect("begin") {
        Once::Done(result) => result,
        Once::Fresh(effect) => {
            effect
                .transaction()
                .execute(
                    &format!("UPDATE {table} SET balance = balance - 5 WHERE id = 1"),
                    &[],
                )
                .await
                .expect("effect");
            effect.commit(json!({ "taken": 5 })).await.expect("commit")
        }
    }
}

#[tokio::test]
async fn an_effect_run_twice_with_one_key_happens_once() {
    let Some(mut client) = connect().await else {
        return;
    };
    let table = account(&client).await;
    let key = unique("key");
    assert_eq!(
        take_five(&mut client, &table, &key).await,
        json!({ "taken": 5 })
    );
    assert_eq!(
        take_five(&mut client, &table, &key).await,
        json!({ "taken": 5 }),
        "the recorded result"
    );
    assert_eq!(balance(&client, &table).await, 95);
    take_five(&mut client, &table, &unique("key")).await;
    assert_eq!(
        balance(&client, &table).await,
        90,
        "another key is another effect"
    );
}

#[tokio::test]
async fn an_execution_that_did_not_commit_leaves_the_effect_to_the_next() {
    let Some(mut client) = connect().await else {
        return;
    };
    let table = account(&client).await;
    let key = unique("key");
    match Once::<Value>::begin(&mut client, &key)
        .await
        .expect("begin")
    {
        Once::Fresh(effect) => {
            effect
                .transaction()
                .execute(&format!("UPDATE {table} SET balance = 0 WHERE id = 1"), &[])
                .await
                .expect("effect");
            // Dropped: the execution died before its commit.
        }
        Once::Done(_) => panic!("a new key is fresh"),
    }
    assert_eq!(balance(&client, &table).await, 100, "rolled back");
    take_five(&mut client, &table, &key).await;
    assert_eq!(balance(&client, &table).await, 95);
}

#[tokio::test]
async fn two_executions_at_once_do_the_effect_once() {
    let Some(mut first) = connect().await else {
        return;
    };
    let Some(mut second) = connect().await else {
        return;
    };
    let table = account(&first).await;
    let key = unique("key");
    let (a, b) = tokio::join!(
        take_five(&mut first, &table, &key),
        take_five(&mut second, &table, &key)
    );
    assert_eq!((a, b), (json!({ "taken": 5 }), json!({ "taken": 5 })));
    assert_eq!(balance(&first, &table).await, 95);
}
