//! Join tickets on the server (`--ticket-secret-file`, `--tickets-for`): the secret shared
//! with the game's backend, which joins need one, and the check a fresh join passes before it
//! touches a room. The format and
//! the check itself are the schema's ([`ackwire_signalling::ticket`]); here are the secret,
//! the clock and the refusal.

use std::{
    path::Path,
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use ackwire_signalling::{
    AppInfo, Role,
    ticket::{self, Claims, TicketError},
};

use crate::error::SignalError;

/// The fewest bytes a secret may have (256 bits; `openssl rand -hex 32` writes 64).
pub const MIN_SECRET_BYTES: usize = 32;

/// The most bytes a secret file may hold: anything longer is not a secret written for this.
const MAX_SECRET_BYTES: usize = 4096;

/// Which fresh joins must carry a ticket (`--tickets-for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TicketScope {
    /// Every one: nobody the game's backend did not admit joins any room.
    #[default]
    All,
    /// A host room's host alone: anyone who knows a room's name plays in it, but only a
    /// member the backend named may hold its host's seat. Other joins may still carry a
    /// ticket, which is then checked and gives them their identity.
    Hosts,
}

/// The secret join tickets are checked with, and which joins need one. Never shown: its
/// `Debug` says only its length.
#[derive(Clone)]
pub struct TicketSecret(Arc<[u8]>, TicketScope);

impl std::fmt::Debug for TicketSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TicketSecret({} bytes, {:?})", self.0.len(), self.1)
    }
}

impl TicketSecret {
    /// The secret in `text`: its bytes without the ASCII whitespace around them (a file
    /// written with `echo` ends with a newline); at least [`MIN_SECRET_BYTES`].
    pub fn new(text: &[u8]) -> Result<TicketSecret, String> {
        let secret = text.trim_ascii();
        if secret.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "the secret has {} bytes; it needs at least {MIN_SECRET_BYTES} (e.g. `openssl rand -hex 32`)",
                secret.len()
            ));
        }
        Ok(TicketSecret(secret.into(), TicketScope::All))
    }

    /// The secret in the file at `path` (see [`TicketSecret::new`]); the error names the flag,
    /// the path and the reason.
    pub fn load(path: &Path) -> Result<TicketSecret, String> {
        let failed = |reason: String| format!("--ticket-secret-file {}: {reason}", path.display());
        let size = std::fs::metadata(path)
            .map_err(|e| failed(e.to_string()))?
            .len();
        if size > MAX_SECRET_BYTES as u64 {
            return Err(failed(format!(
                "{size} bytes; a secret file holds at most {MAX_SECRET_BYTES}"
            )));
        }
        let text = std::fs::read(path).map_err(|e| failed(e.to_string()))?;
        TicketSecret::new(&text).map_err(failed)
    }

    /// The same secret, required of the joins `scope` names.
    pub fn with_scope(self, scope: TicketScope) -> TicketSecret {
        TicketSecret(self.0, scope)
    }

    /// Which joins need a ticket.
    pub fn scope(&self) -> TicketScope {
        self.1
    }

    /// Whether a fresh join as `role` must carry a ticket.
    pub fn required(&self, role: Role) -> bool {
        self.1 == TicketScope::All || role == Role::Host
    }

    /// The claims of the join's `ticket` for `room` as `role` declaring `app`, checked now;
    /// refused (nothing else done) without one, or with one that is not for this join.
    pub fn check(
        &self,
        ticket: Option<&str>,
        room: &str,
        role: Role,
        app: Option<&AppInfo>,
    ) -> Result<Claims, SignalError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let app = app.map(|app| app.id.as_str());
        ticket::verify(&self.0, ticket.unwrap_or(""), now, room, role, app)
            .map_err(SignalError::Ticket)
    }

    /// A ticket for these claims (for tests and tools that stand in for a backend).
    pub fn mint(&self, claims: &Claims) -> String {
        ticket::mint(&self.0, claims)
    }
}

impl From<TicketError> for SignalError {
    fn from(err: TicketError) -> SignalError {
        SignalError::Ticket(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_the_files_bytes_without_surrounding_whitespace_and_at_least_32_of_them() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), format!("{hex}\n")).unwrap();
        let secret = TicketSecret::load(file.path()).unwrap();
        assert_eq!(&*secret.0, hex.as_bytes());
        assert_eq!(format!("{secret:?}"), "TicketSecret(64 bytes, All)");
        std::fs::write(file.path(), "  short secret \n").unwrap();
        let err = TicketSecret::load(file.path()).unwrap_err();
        assert!(err.starts_with("--ticket-secret-file "), "{err}");
        assert!(err.contains("at least 32"), "{err}");
        std::fs::write(file.path(), vec![b'x'; MAX_SECRET_BYTES + 1]).unwrap();
        assert!(TicketSecret::load(file.path()).is_err());
        let missing = TicketSecret::load(Path::new("/no/such/secret")).unwrap_err();
        assert!(missing.contains("/no/such/secret"), "{missing}");
    }

    #[test]
    fn a_join_without_a_ticket_is_refused_with_ticket_missing() {
        let secret = TicketSecret::new(&[7; 32]).unwrap();
        let err = secret.check(None, "r", Role::Peer, None).unwrap_err();
        assert_eq!(err.code(), ackwire_signalling::ErrorCode::TicketMissing);
        let claims = Claims::new("r", Role::Peer, "u", None, u64::MAX).unwrap();
        let ticket = secret.mint(&claims);
        assert_eq!(
            secret.check(Some(&ticket), "r", Role::Peer, None),
            Ok(claims)
        );
    }
}
