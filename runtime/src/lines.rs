//! Lines a child process prints, read with a bound on each line: a process that writes without
//! ever ending a line cannot grow ofc's memory (tokio's `lines()` buffers a line whole).

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest line kept of a child's output; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 16 * 1024;

/// Reads lines of at most `max` bytes (see [`BoundedLines::next_line`]).
#[derive(Debug)]
pub struct BoundedLines<R> {
    reader: BufReader<R>,
    max: usize,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    /// Lines of `reader`, each kept to `max` bytes.
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            max,
            line: Vec::new(),
        }
    }

    /// The next line without its line break, decoded lossily; a line past `max` bytes ends
    /// there with `…` (the rest of it is read and dropped). `None` at the end or on an error.
    pub async fn next_line(&mut self) -> Option<String> {
        self.line.clear();
        let mut cut = false;
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(b) => b,
                Err(_) => return None,
            };
            if available.is_empty() {
                return (!self.line.is_empty() || cut).then(|| self.finish(cut));
            }
            let (taken, ends) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            let room = self.max.saturating_sub(self.line.len());
            self.line.extend_from_slice(&available[..taken.min(room)]);
            cut |= taken > room;
            self.reader.consume(taken + usize::from(ends));
            if ends {
                return Some(self.finish(cut));
            }
        }
    }

    fn finish(&self, cut: bool) -> String {
        let mut text = String::from_utf8_lossy(&self.line).into_owned();
        if text.ends_with('\r') {
            text.pop();
        }
        if cut {
            text.push('…');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_cut_and_the_rest_goes_on() {
        let mut input = vec![b'x'; 100_000];
        input.extend_from_slice(b"\nshort\r\nlast");
        let mut lines = BoundedLines::new(&input[..], 10);
        assert_eq!(lines.next_line().await.as_deref(), Some("xxxxxxxxxx…"));
        assert_eq!(lines.next_line().await.as_deref(), Some("short"));
        assert_eq!(lines.next_line().await.as_deref(), Some("last"));
        assert_eq!(lines.next_line().await, None);
    }
}
