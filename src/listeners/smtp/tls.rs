//! The certificate a listener offers TLS with: read from PEM files (`[submission] cert`, `key`)
//! and read again on SIGHUP, so a certificate an ACME client renews is taken without a restart.
//! A reload that fails keeps the certificate in use.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

/// The certificate in use, and where it is read from.
pub struct Certificates {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<TlsAcceptor>,
}

impl Certificates {
    /// Reads the certificate chain and key; what is wrong with them otherwise.
    pub fn load(cert: &Path, key: &Path) -> Result<Arc<Certificates>, String> {
        let acceptor = acceptor(cert, key)?;
        Ok(Arc::new(Certificates { cert: cert.into(), key: key.into(), current: RwLock::new(acceptor) }))
    }

    /// What a session starts TLS with now.
    pub fn acceptor(&self) -> TlsAcceptor {
        self.current.read().map(|a| a.clone()).unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// Reads the files again; sessions started from then on use them.
    pub fn reload(&self) -> Result<(), String> {
        let fresh = acceptor(&self.cert, &self.key)?;
        match self.current.write() {
            Ok(mut current) => *current = fresh,
            Err(poisoned) => *poisoned.into_inner() = fresh,
        }
        Ok(())
    }
}

fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate in it", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Reads `certificates` again on every SIGHUP, for as long as the process runs.
pub fn reload_on_hangup(certificates: Arc<Certificates>) -> std::io::Result<JoinHandle<()>> {
    let mut hangups = signal(SignalKind::hangup())?;
    Ok(tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            match certificates.reload() {
                Ok(()) => tracing::info!("SIGHUP: the submission listener's certificate was read again"),
                Err(e) => {
                    tracing::error!("SIGHUP: the certificate could not be read again, the old one stays: {e}")
                }
            }
        }
    }))
}
