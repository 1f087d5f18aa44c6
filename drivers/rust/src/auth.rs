//! The hello's `auth` (drivers/PROTOCOL.md): Pulsar token authentication (`Authentication` named
//! "token") and TLS: the broker's certificate checked against the trusted certificates
//! (`with_certificate_chain_file`), its host name unless told not to
//! (`with_tls_hostname_verification_enabled`). The crate has no client certificate (its
//! `TlsOptions` holds only the trusted chain), so a hello that asks for mutual TLS is refused and
//! the driver does not declare `tls_client_cert`.
//!
//! A connection the broker refuses (a token it does not take, a certificate not trusted) is not
//! retried by the crate, but its error says only "fatal error when connecting to the Pulsar server":
//! why is in its log ("connection error, not retryable: [PulsarError(Some(AuthenticationError),
//! ...)]"). So the driver's logger keeps the last such line (`LogWatch`), and that error is
//! answered with it. A hello with `auth` builds the client at once, so a refusal is its reply.

use std::sync::Mutex;

use log::{LevelFilter, Log, Metadata, Record};
use pulsar::{Authentication, Error, PulsarBuilder, TokioExecutor};
use serde_json::Value;

use crate::protocol::error;
use crate::secrets::hide;

/// What the crate logs, as its error does not say it, when it gives up on a connection.
const GIVEN_UP: &str = "connection error, not retryable: ";
const FATAL: &str = "fatal error when connecting to the Pulsar server";

static LAST_REFUSAL: Mutex<Option<String>> = Mutex::new(None);

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Auth {
    token: Option<String>,
    trust_certs: Option<String>,
    hostname_verification: bool,
}

impl Auth {
    /// The hello's auth: None when it has none (the client is built as without credentials), an
    /// error reply when it asks for what the crate cannot do (a client certificate).
    pub fn of(auth: Option<&Value>) -> Result<Option<Auth>, Value> {
        let Some(auth) = auth.filter(|a| a.is_object()) else {
            return Ok(None);
        };
        let text = |name: &str| {
            auth.get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let token = text("token");
        if let Some(token) = &token {
            hide(token); // before anything is answered, a refusal included
        }
        if text("tls_cert").is_some() || text("tls_key").is_some() {
            return Err(error(
                "UnsupportedSetting",
                &format!(
                    "the crate pulsar {} has no client certificate (mutual TLS): its TLS options hold only the \
                     trusted certificates, so auth.tls_cert and auth.tls_key cannot be used",
                    env!("PULSAR_CRATE_VERSION")
                ),
            ));
        }
        Ok(Some(Auth {
            token,
            trust_certs: text("tls_trust_certs"),
            hostname_verification: auth
                .get("tls_hostname_verification")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        }))
    }

    pub fn apply(&self, builder: PulsarBuilder<TokioExecutor>) -> Result<PulsarBuilder<TokioExecutor>, Error> {
        let mut builder = builder.with_tls_hostname_verification_enabled(self.hostname_verification);
        if let Some(token) = &self.token {
            builder = builder.with_auth(Authentication {
                name: "token".into(),
                data: token.clone().into_bytes(),
            });
        }
        if let Some(path) = &self.trust_certs {
            builder = builder
                .with_certificate_chain_file(path)
                .map_err(|e| Error::Custom(format!("auth.tls_trust_certs: cannot read {path}: {e}")))?;
        }
        Ok(builder)
    }
}

/// An authentication or TLS failure as an error reply (the suite stops: no verdict on the client).
pub fn refusal(e: &Error) -> Option<Value> {
    let mut why = format!("{e:?}");
    if e.to_string().contains(FATAL) {
        if let Some(logged) = LAST_REFUSAL.lock().unwrap_or_else(|e| e.into_inner()).take() {
            why = logged;
        }
    }
    if why.contains("AuthenticationError") || why.contains("Authentication(") {
        Some(error("AuthenticationError", &format!("authentication failed: {why}")))
    } else if why.contains("Tls(") {
        Some(error(
            "TlsError",
            &format!("the TLS handshake with the broker failed: {why}"),
        ))
    } else {
        None
    }
}

/// The driver's logger: env_logger's, which also keeps the crate's last word on a connection it
/// gave up on, for `refusal`.
pub struct LogWatch {
    inner: env_logger::Logger,
}

impl LogWatch {
    pub fn install(inner: env_logger::Logger) {
        let level = inner.filter().max(LevelFilter::Error);
        if log::set_boxed_logger(Box::new(LogWatch { inner })).is_ok() {
            log::set_max_level(level);
        }
    }
}

impl Log for LogWatch {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.target().starts_with("pulsar::connection") || self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        if record.target().starts_with("pulsar::connection") {
            let text = record.args().to_string();
            if let Some(why) = text.strip_prefix(GIVEN_UP) {
                *LAST_REFUSAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.to_string());
            }
        }
        if self.inner.matches(record) {
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hello_without_auth_has_none_and_a_client_certificate_is_refused() {
        assert_eq!(Auth::of(None), Ok(None));
        assert_eq!(Auth::of(Some(&Value::Null)), Ok(None));
        let auth = Auth::of(Some(&json!({"tls_trust_certs": "/ca.pem"}))).unwrap().unwrap();
        assert!(auth.hostname_verification && auth.token.is_none());
        let refused = Auth::of(Some(&json!({"tls_cert": "/c.pem", "tls_key": "/k.pem"}))).unwrap_err();
        assert_eq!(refused["error"]["class"], "UnsupportedSetting");
    }

    #[test]
    fn the_token_of_a_hello_is_hidden() {
        Auth::of(Some(
            &json!({"token": "h3ll0-token", "tls_hostname_verification": false}),
        ))
        .unwrap();
        assert_eq!(crate::secrets::redact("h3ll0-token"), "***");
    }
}
