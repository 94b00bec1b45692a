//! A fresh PostgreSQL schema for a benchmark, the one helper the benches
//! share (`#[path]`-included by those that measure PostgreSQL).

/// Drops and creates schema `schema` of the database at `url`, runs
/// `setup` in it (the application's tables, or nothing), and gives a URL
/// whose connections use it.
pub async fn fresh_schema(url: &str, schema: &str, setup: &str) -> String {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path = {schema}; {setup}"
        ))
        .await
        .expect("schema");
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-csearch_path%3D{schema}")
}
