//! Reading a small text input a user names (a scenario for `slacknet-sim`, a coflow trace):
//! a regular file of bounded size, as the Python front end's `config.read_text_file` reads
//! one. A folder, a FIFO or a device is refused before it is opened (a FIFO without a writer
//! blocks for ever, `/dev/zero` never ends), and a file is read only up to the bound, even if
//! it grows meanwhile. Each caller words the refusal for what it reads.

use std::io::Read;
use std::path::Path;

/// Why [`read_text_file`] read nothing.
#[derive(Debug)]
pub enum TextFileError {
    /// The path is a folder.
    Folder,
    /// Not a regular file: a FIFO, a device or a socket.
    NotRegular,
    /// Larger than the bound given.
    TooLarge,
    /// Not UTF-8: the first `valid_up_to` bytes are.
    NotUtf8 {
        /// Length of the valid prefix, in bytes.
        valid_up_to: usize,
    },
    /// The file could not be found or read.
    Io(std::io::Error),
}

/// The text of the regular file `path` of at most `max_bytes` bytes.
pub fn read_text_file(path: &Path, max_bytes: u64) -> Result<String, TextFileError> {
    let meta = std::fs::metadata(path).map_err(TextFileError::Io)?;
    if meta.is_dir() {
        return Err(TextFileError::Folder);
    }
    if !meta.is_file() {
        return Err(TextFileError::NotRegular);
    }
    if meta.len() > max_bytes {
        return Err(TextFileError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(TextFileError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(TextFileError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|e| TextFileError::NotUtf8 { valid_up_to: e.utf8_error().valid_up_to() })
}

/// [`read_text_file`]'s refusal of a file of at most `max_bytes` as one phrase for a message
/// naming the file, `what` being what the file should be (e.g. "a flow list").
pub fn describe(e: &TextFileError, max_bytes: u64, what: &str) -> String {
    match e {
        TextFileError::Folder => format!("a folder, not {what}"),
        TextFileError::NotRegular => format!("not a regular file (a FIFO, device or socket); give {what}"),
        TextFileError::TooLarge => format!("larger than {} MiB, the most {what} may hold", max_bytes >> 20),
        TextFileError::NotUtf8 { valid_up_to } => format!("not UTF-8 text (from byte {valid_up_to})"),
        TextFileError::Io(e) => e.to_string(),
    }
}

/// The largest flow list read (`kind = "flow_list"`): about 25 M flows of 40-byte lines.
pub const MAX_FLOW_LIST_BYTES: u64 = 1 << 30;
/// The largest flow-size CDF file read (`cdf = "path"`; the built-in ones are a few kB).
pub const MAX_CDF_BYTES: u64 = 16 << 20;
/// The largest Credence forest file read (the built-in model is 30 kB; 1,000 trees of depth 10
/// in the exported JSON are about 50 MB).
pub const MAX_FOREST_BYTES: u64 = 256 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_the_bound_is_read() {
        let dir = std::env::temp_dir().join(format!("slacknet-textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.txt");
        std::fs::write(&f, "héllo").unwrap();
        assert_eq!(read_text_file(&f, 6).unwrap(), "héllo");
        assert!(matches!(read_text_file(&f, 5), Err(TextFileError::TooLarge)));
        assert!(matches!(read_text_file(&dir, 100), Err(TextFileError::Folder)));
        assert!(matches!(read_text_file(&dir.join("none"), 100), Err(TextFileError::Io(_))));
        std::fs::write(&f, b"ok\xff").unwrap();
        assert!(matches!(read_text_file(&f, 100), Err(TextFileError::NotUtf8 { valid_up_to: 2 })));
        if Path::new("/dev/zero").exists() {
            assert!(matches!(read_text_file(Path::new("/dev/zero"), 100), Err(TextFileError::NotRegular)));
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
