//! Writes `conformance/jcp/v1/efficiency.json` (run from the repository root,
//! or pass the output path).

use std::process::ExitCode;

fn main() -> ExitCode {
    let out = std::env::args().nth(1).unwrap_or_else(|| jcp_meter::vectors::PACK_PATH.to_owned());
    let pack = match jcp_meter::vectors::generate() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("gen-efficiency-vectors: the implementation does not meet a vector: {e}");
            return ExitCode::from(1);
        }
    };
    let path = std::path::Path::new(&out);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("gen-efficiency-vectors: {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    if let Err(e) = std::fs::write(path, pack) {
        eprintln!("gen-efficiency-vectors: {out}: {e}");
        return ExitCode::from(2);
    }
    println!("wrote {out}");
    ExitCode::SUCCESS
}
