//! Prints the generated `schema.json` (the same text `jcp intent schema`
//! prints): `cargo run -p intent --example schema > conformance/intent/schema.json`.

fn main() -> Result<(), serde_json::Error> {
    print!("{}", intent::schema::schema_text()?);
    Ok(())
}
