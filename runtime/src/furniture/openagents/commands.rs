//! `project.json`'s `testCommands` and `typecheckCommands`, run for the floor: one after the
//! other, stopping at the first that fails, each in the project root (`sh -c`, a process
//! group of its own, killed whole at the timeout or when the call is dropped) or, when the
//! project's `sandbox.enabled` is true and the floor has a sandbox workstation, through that
//! sandbox's `bash`. Output is capped (first ¾ and last ¼ kept).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::furniture::sandbox::read_capped;
use crate::llm::{ToolError, Toolbox};

/// Kills a command's process group when dropped (its call was cancelled or timed out).
struct KillGroup(Option<u32>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.0 {
            crate::agent::signal_group(pgid, true);
        }
    }
}

/// How one command ended.
#[derive(Debug)]
struct Ran {
    exit: Option<i32>,
    output: String,
    timed_out: bool,
}

async fn run_local(
    root: &Path,
    command: &str,
    timeout: Duration,
    cap: usize,
) -> Result<Ran, ToolError> {
    let mut cmd = tokio::process::Command::new("sh");
    for k in crate::SECRET_ENV {
        cmd.env_remove(k);
    }
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError(format!("cannot run `{command}`: {e}")))?;
    let guard = KillGroup(child.id());
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError("the command's output was not captured".into()));
    };
    let work = async {
        let (out, err) = tokio::join!(
            read_capped(stdout, cap, None),
            read_capped(stderr, cap, None)
        );
        let status = child.wait().await;
        (out, err, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((out, err, status)) => {
            // The group's leader has exited; what it left running goes with the group.
            let code = status.ok().and_then(|s| s.code());
            drop(guard);
            Ok(Ran {
                exit: code,
                output: joined(out.into_string(), err.into_string(), cap),
                timed_out: false,
            })
        }
        Err(_) => {
            // The guard kills the whole group.
            drop(guard);
            Ok(Ran {
                exit: None,
                output: String::new(),
                timed_out: true,
            })
        }
    }
}

fn joined(out: String, err: String, cap: usize) -> String {
    let mut text = out;
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&err);
    }
    cut_middle(&text, cap)
}

/// `text` within about `cap` bytes, its middle replaced by a marker.
fn cut_middle(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut head = cap * 3 / 4;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (cap - cap * 3 / 4);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n… [{} bytes cut] …\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

async fn run_in_sandbox(
    sandbox: &Arc<dyn Toolbox>,
    command: &str,
    timeout: Duration,
) -> Result<Ran, ToolError> {
    let mut args = serde_json::Map::new();
    args.insert("command".into(), json!(command));
    args.insert("timeout".into(), json!(timeout.as_secs().max(1)));
    match sandbox.call("bash", args).await {
        Ok(value) => {
            let output = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            // The sandbox appends `[exit code N]` when it is not 0.
            let exit = output
                .rsplit_once("[exit code ")
                .and_then(|(_, rest)| rest.trim_end().trim_end_matches(']').parse().ok())
                .unwrap_or(0);
            Ok(Ran {
                exit: Some(exit),
                output,
                timed_out: false,
            })
        }
        Err(e) if e.0.contains("timed out") || e.0.contains("killed after") => Ok(Ran {
            exit: None,
            output: e.0,
            timed_out: true,
        }),
        Err(e) => Err(e),
    }
}

/// Runs `commands` in order until one fails. Answers `{passed, results: [{command, exitCode,
/// timedOut, output}]}`.
pub async fn run_all(
    root: &Path,
    commands: &[String],
    timeout: Duration,
    cap: usize,
    sandbox: Option<&Arc<dyn Toolbox>>,
) -> Result<Value, ToolError> {
    let mut results = Vec::new();
    let mut passed = true;
    for command in commands {
        let ran = match sandbox {
            Some(s) => run_in_sandbox(s, command, timeout).await?,
            None => run_local(root, command, timeout, cap).await?,
        };
        let ok = !ran.timed_out && ran.exit == Some(0);
        results.push(json!({
            "command": command,
            "exitCode": ran.exit,
            "timedOut": ran.timed_out,
            "output": ran.output,
        }));
        if !ok {
            passed = false;
            break;
        }
    }
    Ok(json!({
        "passed": passed,
        "where": if sandbox.is_some() { "sandbox" } else { "project root" },
        "results": results,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commands_run_in_order_until_one_fails_and_a_timeout_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let commands = vec![
            "echo one; pwd".to_owned(),
            "echo two >&2; exit 3".to_owned(),
            "echo never".to_owned(),
        ];
        let r = run_all(dir.path(), &commands, Duration::from_secs(10), 4096, None)
            .await
            .unwrap();
        assert_eq!(r["passed"], false);
        let results = r["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        let first = results[0]["output"].as_str().unwrap();
        assert!(first.starts_with("one\n"), "{first}");
        assert!(first.contains(&dir.path().canonicalize().unwrap().display().to_string()));
        assert_eq!(results[1]["exitCode"], 3);
        assert_eq!(results[1]["output"], "two\n");

        let marker = dir.path().join("survived");
        let slow = vec![format!("(sleep 2; touch {}) & sleep 30", marker.display())];
        let start = std::time::Instant::now();
        let r = run_all(dir.path(), &slow, Duration::from_millis(300), 4096, None)
            .await
            .unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(r["results"][0]["timedOut"], true);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            !marker.exists(),
            "a process of the timed-out command survived"
        );

        let long = vec!["yes ofc | head -c 100000".to_owned()];
        let r = run_all(dir.path(), &long, Duration::from_secs(10), 1000, None)
            .await
            .unwrap();
        let out = r["results"][0]["output"].as_str().unwrap();
        assert!(out.len() < 1200, "{}", out.len());
        assert!(out.contains("bytes cut"));
    }
}
