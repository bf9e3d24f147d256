//! The SSRF-safe fetcher below both roles (`strict_mcp::net::fetch::SafeFetcher`) and the two
//! roles' OAuth fetchers built on it (`client::auth::DialingFetcher`,
//! `server::auth::DialingFetcher`): the dial policy is fixed from the base URL and checked at
//! every dial (D47), HTTPS goes through rustls, bodies are bounded and redirects are returned,
//! never followed. Every test listens on 127.0.0.1 only; names resolve through an injected
//! resolver and every dial goes through an injected connector that records it and always
//! connects to the loopback test server, so nothing ever dials another address.
#![cfg(all(feature = "client-auth", feature = "auth"))]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use hyper::body::Bytes;
use hyper::Method;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use strict_mcp::client::auth::{self as client_auth, Fetcher as _};
use strict_mcp::net::dial::{AddressClass, Connect, DialError, Resolve};
use strict_mcp::net::fetch::{SafeFetchError, SafeFetcher};
use strict_mcp::net::BoxFuture;
use strict_mcp::server::auth::{self as server_auth, Fetcher as _};

/// Names resolve to the given addresses; every dial is recorded and goes to `server`.
struct Net {
    answers: Vec<(String, IpAddr)>,
    dials: Mutex<Vec<SocketAddr>>,
    server: SocketAddr,
}

struct Lookup(Arc<Net>);
struct Dial(Arc<Net>);

impl Resolve for Lookup {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            let found: Vec<SocketAddr> = self
                .0
                .answers
                .iter()
                .filter(|(name, _)| name == host)
                .map(|(_, ip)| SocketAddr::new(*ip, port))
                .collect();
            if found.is_empty() {
                return Err(io::Error::new(io::ErrorKind::NotFound, "no such name"));
            }
            Ok(found)
        })
    }
}

impl Connect for Dial {
    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        Box::pin(async move {
            self.0.dials.lock().unwrap().push(addr);
            TcpStream::connect(self.0.server).await
        })
    }
}

fn net(server: SocketAddr, answers: &[(&str, &str)]) -> Arc<Net> {
    Arc::new(Net {
        answers: answers
            .iter()
            .map(|(n, ip)| ((*n).to_owned(), ip.parse().unwrap()))
            .collect(),
        dials: Mutex::new(Vec::new()),
        server,
    })
}

fn fetcher(base: &str, net: &Arc<Net>) -> SafeFetcher {
    SafeFetcher::for_base(base)
        .unwrap()
        .resolver(Arc::new(Lookup(Arc::clone(net))))
        .connector(Arc::new(Dial(Arc::clone(net))))
}

const DOC: &[u8] = br#"{"issuer":"https://as.example.com"}"#;

fn answer(head: &str) -> Vec<u8> {
    if head.starts_with("GET /moved ") {
        return b"HTTP/1.1 302 Found\r\nlocation: http://169.254.169.254/latest\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec();
    }
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        DOC.len()
    )
    .into_bytes();
    out.extend_from_slice(DOC);
    out
}

async fn answer_one<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S, heads: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    heads.lock().unwrap().push(head.clone());
    let _ = socket.write_all(&answer(&head)).await;
    let _ = socket.shutdown().await;
}

/// A plain loopback server; returns its address and the request heads it saw.
async fn server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let kept = Arc::clone(&kept);
            tokio::spawn(async move { answer_one(socket, &kept).await });
        }
    });
    (addr, heads)
}

async fn get(fetcher: &SafeFetcher, url: &str, max: usize) -> Result<u16, SafeFetchError> {
    fetcher
        .fetch(Method::GET, url, &[], None, max)
        .await
        .map(|r| r.status)
}

/// D47: the base URL names loopback, so loopback is reached; a public name is reached (the
/// dial recorded with the resolved public address, the bytes going to the loopback server).
#[tokio::test]
async fn d47_the_base_names_loopback_and_a_public_name_is_dialled_checked() {
    let (addr, heads) = server().await;
    let plain = SafeFetcher::for_base(&format!("http://{addr}/mcp")).unwrap();
    let response = plain
        .fetch(
            Method::GET,
            &format!("http://{addr}/.well-known/oauth-authorization-server"),
            &[("accept".into(), "application/json".into())],
            None,
            DOC.len(),
        )
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, Bytes::from_static(DOC));
    let net = net(addr, &[("as.example.com", "93.184.216.34")]);
    let public = fetcher("http://mcp.example.com/mcp", &net);
    assert_eq!(
        get(&public, "http://as.example.com:8080/doc", DOC.len()).await,
        Ok(200)
    );
    assert_eq!(
        *net.dials.lock().unwrap(),
        ["93.184.216.34:8080".parse::<SocketAddr>().unwrap()]
    );
    assert!(heads.lock().unwrap()[1].contains("host: as.example.com:8080"));
}

/// D47: with a public base, a name resolving to loopback or link-local and an IP literal of
/// either are refused typed, and nothing is dialled.
#[tokio::test]
async fn d47_loopback_and_link_local_are_refused_unless_the_base_names_them() {
    let (addr, _) = server().await;
    let net = net(
        addr,
        &[
            ("rebind.example.com", "127.0.0.1"),
            ("metadata.example.com", "169.254.169.254"),
            ("mixed.example.com", "93.184.216.34"),
            ("mixed.example.com", "10.0.0.1"),
        ],
    );
    let safe = fetcher("https://mcp.example.com/mcp", &net);
    let blocked = |addr: &str, class| {
        Err(SafeFetchError::Dial(DialError::Blocked {
            addr: addr.parse().unwrap(),
            class,
        }))
    };
    assert_eq!(
        get(&safe, "http://rebind.example.com/x", 64).await,
        blocked("127.0.0.1", AddressClass::Loopback)
    );
    assert_eq!(
        get(&safe, "http://metadata.example.com/x", 64).await,
        blocked("169.254.169.254", AddressClass::LinkLocal)
    );
    assert_eq!(
        get(&safe, "http://169.254.169.254/latest", 64).await,
        blocked("169.254.169.254", AddressClass::LinkLocal)
    );
    assert_eq!(
        get(&safe, &format!("http://{addr}/x"), 64).await,
        blocked("127.0.0.1", AddressClass::Loopback)
    );
    // A mixed answer is refused whole; private networks only when opted in.
    assert_eq!(
        get(&safe, "http://mixed.example.com/x", 64).await,
        blocked("10.0.0.1", AddressClass::Private)
    );
    assert!(net.dials.lock().unwrap().is_empty(), "nothing was dialled");
    let intranet = safe.clone().allow_private_networks();
    assert_eq!(
        get(&intranet, "http://mixed.example.com/x", DOC.len()).await,
        Ok(200)
    );
    assert_eq!(
        get(&intranet, "http://metadata.example.com/x", 64).await,
        blocked("169.254.169.254", AddressClass::LinkLocal)
    );
}

/// The body cap at the bound and one below it; a redirect is returned, never followed (its
/// target, link-local here, is never dialled); credentials in the URL are refused.
#[tokio::test]
async fn bodies_bounded_and_redirects_returned_not_followed() {
    let (addr, heads) = server().await;
    let safe = SafeFetcher::for_base(&format!("http://{addr}/mcp")).unwrap();
    assert_eq!(
        get(&safe, &format!("http://{addr}/doc"), DOC.len()).await,
        Ok(200)
    );
    assert_eq!(
        get(&safe, &format!("http://{addr}/doc"), DOC.len() - 1).await,
        Err(SafeFetchError::BodyTooLarge {
            limit: DOC.len() - 1
        })
    );
    let moved = safe
        .fetch(Method::GET, &format!("http://{addr}/moved"), &[], None, 64)
        .await
        .unwrap();
    assert_eq!(moved.status, 302);
    assert_eq!(
        heads.lock().unwrap().len(),
        3,
        "the redirect was not followed"
    );
    assert_eq!(
        get(&safe, &format!("http://user:pw@{addr}/doc"), 64).await,
        Err(SafeFetchError::BadUrl)
    );
    assert_eq!(
        SafeFetcher::for_base("ftp://example.com/").err(),
        Some(SafeFetchError::BadUrl)
    );
}

/// Both roles' fetchers refuse what the policy refuses (no dial), and reach what it allows;
/// the server's turns a redirect into its typed refusal.
#[tokio::test]
async fn both_roles_fetch_through_the_policy() {
    let (addr, _) = server().await;
    let net = net(addr, &[("rebind.example.com", "127.0.0.1")]);
    let client = client_auth::DialingFetcher::with(fetcher("https://mcp.example.com/mcp", &net));
    let refused = client
        .fetch(client_auth::FetchRequest::get(
            "http://rebind.example.com/.well-known/oauth-authorization-server",
            64,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, client_auth::FetchError::Refused(text) if text.contains("127.0.0.1")),
        "{refused:?}"
    );
    assert!(net.dials.lock().unwrap().is_empty());
    let local = client_auth::DialingFetcher::for_server(&format!("http://{addr}/mcp")).unwrap();
    let ok = local
        .fetch(client_auth::FetchRequest::get(
            format!("http://{addr}/doc"),
            DOC.len(),
        ))
        .await
        .unwrap();
    assert_eq!((ok.status, ok.body.as_slice()), (200, DOC));

    let jwks = format!("http://{addr}/jwks");
    let server = server_auth::DialingFetcher::for_endpoint(&jwks).unwrap();
    let request = |url: String| server_auth::FetchRequest {
        method: Method::GET,
        url,
        headers: Vec::new(),
        body: None,
        max_body: DOC.len(),
        timeout: std::time::Duration::from_secs(5),
    };
    let ok = server.fetch(request(jwks.clone())).await.unwrap();
    assert_eq!((ok.status, ok.body.as_ref()), (200, DOC));
    assert_eq!(ok.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        server
            .fetch(request(format!("http://{addr}/moved")))
            .await
            .err(),
        Some(server_auth::FetchError::Redirect(302))
    );
}

#[cfg(feature = "https")]
mod https {
    use super::*;

    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    use strict_mcp::net::error::{CertificateFault, TlsError};
    use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio_rustls::rustls::{self, ServerConfig};
    use tokio_rustls::TlsAcceptor;

    /// A test CA (DER) and a server configuration whose leaf it signed for `names`.
    fn pki(names: &[&str]) -> (Vec<u8>, Arc<ServerConfig>) {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let leaf = CertificateParams::new(names)
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![leaf.der().clone()], key)
                .unwrap();
        (ca.der().to_vec(), Arc::new(config))
    }

    /// HTTPS to a (non-loopback) authorization server by name: the name resolves to a public
    /// address, the recording connector carries the bytes to the loopback TLS server, the
    /// certificate is checked for the name against the added root. Without that root, the
    /// certificate is refused typed.
    #[tokio::test]
    async fn d47_https_to_a_named_authorization_server_through_the_checked_dial() {
        let (ca, config) = pki(&["as.example.com"]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, kept) = (acceptor.clone(), Arc::clone(&kept));
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(socket).await {
                        answer_one(tls, &kept).await;
                    }
                });
            }
        });
        let net = net(addr, &[("as.example.com", "93.184.216.34")]);
        let url = "https://as.example.com/.well-known/oauth-authorization-server";
        let untrusted = fetcher("https://mcp.example.com/mcp", &net);
        assert_eq!(
            get(&untrusted, url, DOC.len()).await,
            Err(SafeFetchError::Dial(DialError::Tls(TlsError::Certificate(
                CertificateFault::UnknownIssuer
            ))))
        );
        let trusted = untrusted.add_root_certificate(ca).unwrap();
        assert_eq!(get(&trusted, url, DOC.len()).await, Ok(200));
        assert_eq!(
            *net.dials.lock().unwrap(),
            ["93.184.216.34:443".parse::<SocketAddr>().unwrap(); 2]
        );
        assert_eq!(heads.lock().unwrap().len(), 1);
    }
}
