//! `moot-sandbox-exec PROGRAM [TESTS]`: runs a Python program in moot's sandbox, or grades it
//! with a tests file when one is given, and prints `VERDICT<TAB>DETAIL`. For trying the sandbox
//! by hand and for tests that need the sandbox inside a process of their own (killed while it
//! runs, or started as another user). Exit status: 0 when a verdict was printed, 2 otherwise.

use std::process::ExitCode;

use moot_core::validation::TestSuite;
use moot_sandbox::{Limits, Sandbox};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (program, tests) = match args.as_slice() {
        [program] => (program, None),
        [program, tests] => (program, Some(tests)),
        _ => {
            eprintln!("usage: moot-sandbox-exec PROGRAM [TESTS]");
            return ExitCode::from(2);
        }
    };
    // A program and its tests go to the sandbox in one message: no file larger is read, nor a
    // FIFO or a device.
    let limit = moot_files::Limit::new(
        Limits::default().message_bytes as u64,
        "moot-sandbox-exec reads from a file",
    );
    let read = |path: &String| {
        moot_files::read_text(std::path::Path::new(path), limit).map_err(|e| e.to_string())
    };
    let outcome = (|| -> Result<(String, String), String> {
        let program = read(program)?;
        let tests = tests.map(read).transpose()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            let sandbox = Sandbox::new(Limits::default()).map_err(|e| e.to_string())?;
            match tests {
                Some(tests) => {
                    let v = sandbox
                        .run_tests(&program, &TestSuite::user_tests(&tests))
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok((v.verdict.name().to_string(), v.detail))
                }
                None => {
                    let out = sandbox.execute(&program).await.map_err(|e| e.to_string())?;
                    Ok((out.verdict.name().to_string(), out.detail))
                }
            }
        })
    })();
    match outcome {
        Ok((verdict, detail)) => {
            println!("{verdict}\t{detail}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("moot-sandbox-exec: {e}");
            ExitCode::from(2)
        }
    }
}
