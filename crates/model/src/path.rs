//! Which path moves a sending stream's bytes: what a client asks the server for and what each
//! end reports it ran, named the same everywhere (`"copy"`, `"sendfile"`, `"splice"`,
//! `"msg_zerocopy"`).

use serde::{Deserialize, Serialize};

/// Which path moved (or is requested to move) the bytes of sending streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendPath {
    /// write/send from a user buffer.
    Copy,
    /// sendfile(2) from a memfd holding one block.
    Sendfile,
    /// vmsplice(2) of the block into a pipe, then splice(2) to the socket.
    Splice,
    /// send(MSG_ZEROCOPY) with SO_ZEROCOPY; completions from the error queue.
    MsgZerocopy,
}

impl SendPath {
    /// Every path, in the order the names are listed to people.
    pub const ALL: [SendPath; 4] = [
        SendPath::Copy,
        SendPath::Sendfile,
        SendPath::Splice,
        SendPath::MsgZerocopy,
    ];

    /// The name on the wire and in the results.
    pub fn as_str(self) -> &'static str {
        match self {
            SendPath::Copy => "copy",
            SendPath::Sendfile => "sendfile",
            SendPath::Splice => "splice",
            SendPath::MsgZerocopy => "msg_zerocopy",
        }
    }

    /// The path of a name as [`SendPath::as_str`] writes it.
    pub fn from_name(name: &str) -> Option<SendPath> {
        SendPath::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Every name, comma-separated: `"copy, sendfile, splice, msg_zerocopy"`.
    pub fn names() -> String {
        SendPath::ALL.map(SendPath::as_str).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_is_written_and_read_by_its_one_name() {
        for p in SendPath::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
            assert_eq!(serde_json::from_str::<SendPath>(&json).unwrap(), p);
            assert_eq!(SendPath::from_name(p.as_str()), Some(p));
        }
        assert_eq!(SendPath::from_name("bogus"), None);
        assert!(serde_json::from_str::<SendPath>("\"bogus\"").is_err());
        assert_eq!(SendPath::names(), "copy, sendfile, splice, msg_zerocopy");
    }
}
