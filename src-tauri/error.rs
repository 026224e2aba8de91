//! Errors as the front end receives them: `{code, message}`, the code taken
//! from the crates' typed enums, the message in words for a person.

pub use console_view::ipc::UiError;

/// What every command returns.
pub type CmdResult<T> = Result<T, UiError>;

pub(crate) fn store(e: &console_store::StoreError) -> UiError {
    UiError::new(e.code(), e.to_string())
}

pub(crate) fn view(e: &console_view::ViewError) -> UiError {
    UiError::new(e.code(), e.to_string())
}

pub(crate) fn io(code: &str, what: &str, path: &std::path::Path, e: &std::io::Error) -> UiError {
    UiError::new(code, format!("{what} {}: {e}", path.display()))
}

pub(crate) fn poisoned(what: &str) -> UiError {
    UiError::new(
        "app.internal",
        format!("the console's {what} state was left inconsistent by an earlier failure; restart the console"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// STYLE §4: the error serialises to exactly `{code, message}`.
    #[test]
    fn ipc_error_serialises_to_code_and_message_only() {
        let e = store(&console_store::StoreError::Locked { path: "/ws/workspace.sqlite".into() });
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "store.locked", "message": "the workspace store /ws/workspace.sqlite is locked by another process (is another JCP Console open on it?); close it and try again"})
        );
    }
}
