//! The HTTP client transport's network edge: SSRF-safe dialing through an injected resolver
//! and connector (D47), redirects that never reach a refused address, errors free of secrets,
//! and HTTPS through rustls with a test CA generated here.
//!
//! Nothing here dials anything but 127.0.0.1: the injected connector records the address it
//! was asked for and connects to the loopback test server instead, so a "public" stand-in
//! address is never contacted, and a refused address never reaches the connector at all.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "client", feature = "server"))]

#[path = "support/fake_http.rs"]
mod fake_http;

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use strict_mcp::client::http::{
    AddressClass, Connect, Decorator, DialError, HttpError, HttpTransport, Resolve, DIAL_TIMEOUT,
    MAX_DIAL_ADDRESSES, MAX_REDIRECT_HOPS,
};
use strict_mcp::client::{BoxFuture, Inbound, Transport, TransportError};
use strict_mcp::wire::jsonrpc::{Message, Response};

use fake_http::{call_request, http, read_request, refused};

/// Where cloud instance metadata lives: the classic SSRF target.
const METADATA: &str = "169.254.169.254";

/// A public address the resolver may answer; the connector never contacts it (it connects
/// to the loopback server instead).
const PUBLIC_STAND_IN: &str = "198.51.99.7";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

/// An injected resolver and connector that record every lookup and dial attempt.
struct Net {
    /// Per name, the answers to give in turn; the last one repeats.
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    lookups: Mutex<Vec<String>>,
    dials: Mutex<Vec<SocketAddr>>,
    /// The loopback server every permitted dial is connected to.
    server: SocketAddr,
}

impl Net {
    fn new(server: SocketAddr) -> Arc<Net> {
        Arc::new(Net {
            answers: Mutex::new(HashMap::new()),
            lookups: Mutex::new(Vec::new()),
            dials: Mutex::new(Vec::new()),
            server,
        })
    }

    fn answer(&self, name: &str, answers: &[&[&str]]) {
        let answers = answers
            .iter()
            .map(|a| a.iter().map(|s| ip(s)).collect())
            .collect();
        self.answers
            .lock()
            .unwrap()
            .insert(name.to_owned(), answers);
    }

    fn lookups(&self) -> Vec<String> {
        self.lookups.lock().unwrap().clone()
    }

    fn dials(&self) -> Vec<SocketAddr> {
        self.dials.lock().unwrap().clone()
    }

    /// A transport to `url` dialing through this net.
    fn transport(self: &Arc<Net>, url: &str, decorator: Option<Decorator>) -> HttpTransport {
        HttpTransport::new(url, decorator)
            .expect("transport")
            .with_resolver(Arc::new(Lookup(Arc::clone(self))))
            .with_connector(Arc::new(Dial(Arc::clone(self))))
    }
}

struct Lookup(Arc<Net>);

impl Resolve for Lookup {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            self.0.lookups.lock().unwrap().push(host.to_owned());
            let mut answers = self.0.answers.lock().unwrap();
            let queue = answers
                .get_mut(host)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"))?;
            let now = if queue.len() > 1 {
                queue.pop_front().unwrap_or_default()
            } else {
                queue.front().cloned().unwrap_or_default()
            };
            Ok(now
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect())
        })
    }
}

struct Dial(Arc<Net>);

impl Connect for Dial {
    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        Box::pin(async move {
            self.0.dials.lock().unwrap().push(addr);
            // Never the address asked for: always the loopback test server.
            TcpStream::connect(self.0.server).await
        })
    }
}

/// A loopback server answering each request (one per connection) with `answer(head)`;
/// returns its address and the request heads it saw.
async fn raw_server(
    answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static,
) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&heads);
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (answer, kept) = (Arc::clone(&answer), Arc::clone(&kept));
            tokio::spawn(async move { answer_one(socket, &*answer, &kept).await });
        }
    });
    (addr, heads)
}

/// Reads one request (head and `content-length` body) and writes the canned answer.
async fn answer_one<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: S,
    answer: &(dyn Fn(&str) -> Vec<u8> + Send + Sync),
    kept: &Mutex<Vec<String>>,
) {
    let Some((head, _body)) = read_request(&mut socket).await else {
        return;
    };
    let reply = answer(&head);
    kept.lock().unwrap().push(head);
    let _ = socket.write_all(&reply).await;
    let _ = socket.shutdown().await;
}

const OK_BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

fn redirect(status: &str, location: &str) -> Vec<u8> {
    format!("HTTP/1.1 {status}\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .into_bytes()
}

fn blocked(addr: &str, class: AddressClass) -> HttpError {
    HttpError::Dial(DialError::Blocked {
        addr: ip(addr),
        class,
    })
}

async fn answered(transport: &HttpTransport) {
    assert!(matches!(
        transport.recv().await,
        Ok(Inbound::Message(Message::Response(Response::Success(_))))
    ));
}

#[tokio::test]
async fn d47_a_name_resolving_to_link_local_metadata_is_never_dialed() {
    let (server, heads) = raw_server(|_| http("200 OK", "application/json", OK_BODY)).await;
    let net = Net::new(server);
    net.answer("evil.test", &[&[METADATA]]);
    let transport = net.transport("http://evil.test:80/mcp", None);
    let err = transport.send(&call_request(1)).await.expect_err("blocked");
    assert_eq!(refused(err), blocked(METADATA, AddressClass::LinkLocal));
    assert_eq!(net.lookups(), ["evil.test"]);
    assert!(net.dials().is_empty(), "dialed {:?}", net.dials());
    assert!(heads.lock().unwrap().is_empty());
}

#[tokio::test]
async fn d47_a_redirect_to_a_metadata_name_is_neither_resolved_nor_dialed() {
    let (server, heads) =
        raw_server(|_| redirect("307 Temporary Redirect", "http://evil.test/mcp")).await;
    let net = Net::new(server);
    net.answer("evil.test", &[&[METADATA]]);
    let transport = net
        .transport(&format!("http://{server}/mcp"), None)
        .follow_redirects(MAX_REDIRECT_HOPS);
    let err = transport
        .send(&call_request(1))
        .await
        .expect_err("cross origin");
    assert_eq!(refused(err), HttpError::CrossOriginRedirect);
    // The loopback literal is dialed as itself, without a lookup; evil.test never is.
    assert!(net.lookups().is_empty(), "looked up {:?}", net.lookups());
    assert_eq!(net.dials(), [server]);
    assert_eq!(heads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn d47_a_same_origin_redirect_hop_is_checked_again_when_the_name_rebinds() {
    let (server, heads) = raw_server(|head| {
        if head.starts_with("POST /mcp ") {
            redirect("307 Temporary Redirect", "/next")
        } else {
            http("200 OK", "application/json", OK_BODY)
        }
    })
    .await;
    let net = Net::new(server);
    net.answer("svc.test", &[&[PUBLIC_STAND_IN], &[METADATA]]);
    let transport = net
        .transport(&format!("http://svc.test:{}/mcp", server.port()), None)
        .follow_redirects(MAX_REDIRECT_HOPS);
    let err = transport.send(&call_request(1)).await.expect_err("rebound");
    assert_eq!(refused(err), blocked(METADATA, AddressClass::LinkLocal));
    assert_eq!(net.lookups(), ["svc.test", "svc.test"]);
    assert_eq!(
        net.dials(),
        [SocketAddr::new(ip(PUBLIC_STAND_IN), server.port())]
    );
    assert_eq!(heads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn d47_dns_rebinding_is_caught_at_the_next_dial() {
    let (server, heads) = raw_server(|_| http("200 OK", "application/json", OK_BODY)).await;
    let net = Net::new(server);
    net.answer("svc.test", &[&[PUBLIC_STAND_IN], &["127.0.0.1"]]);
    let transport = net.transport(&format!("http://svc.test:{}/mcp", server.port()), None);
    transport.send(&call_request(1)).await.expect("first dial");
    answered(&transport).await;
    // The server closed that connection, so the second message dials (and resolves) again.
    let err = transport.send(&call_request(1)).await.expect_err("rebound");
    assert_eq!(refused(err), blocked("127.0.0.1", AddressClass::Loopback));
    assert_eq!(net.dials().len(), 1);
    assert_eq!(heads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn d47_loopback_is_dialed_only_for_a_loopback_url() {
    let (server, _) = raw_server(|_| http("200 OK", "application/json", OK_BODY)).await;
    let net = Net::new(server);
    net.answer("local.test", &[&["127.0.0.1"]]);
    net.answer("localhost", &[&["127.0.0.1", "::1"]]);
    let port = server.port();
    let named = net.transport(&format!("http://local.test:{port}/mcp"), None);
    let err = named
        .send(&call_request(1))
        .await
        .expect_err("loopback name");
    assert_eq!(refused(err), blocked("127.0.0.1", AddressClass::Loopback));
    assert!(net.dials().is_empty());
    let local = net.transport(&format!("http://localhost:{port}/mcp"), None);
    local.send(&call_request(1)).await.expect("localhost");
    answered(&local).await;
    assert_eq!(net.dials(), [SocketAddr::new(ip("127.0.0.1"), port)]);
    // localhost resolving anywhere but loopback is refused.
    net.answer("localhost", &[&["10.0.0.1"]]);
    let err = local
        .send(&call_request(1))
        .await
        .expect_err("not loopback");
    assert_eq!(refused(err), blocked("10.0.0.1", AddressClass::Private));
    assert_eq!(net.dials().len(), 1);
}

#[tokio::test]
async fn d47_private_networks_are_opt_in_and_never_include_link_local() {
    let (server, _) = raw_server(|_| http("200 OK", "application/json", OK_BODY)).await;
    let net = Net::new(server);
    net.answer("intranet.test", &[&["10.1.2.3"]]);
    net.answer("meta.test", &[&[METADATA]]);
    let url = format!("http://intranet.test:{}/mcp", server.port());
    let err = net
        .transport(&url, None)
        .send(&call_request(1))
        .await
        .expect_err("private");
    assert_eq!(refused(err), blocked("10.1.2.3", AddressClass::Private));
    assert!(net.dials().is_empty());
    let intranet = net.transport(&url, None).allow_private_networks();
    intranet.send(&call_request(1)).await.expect("opted in");
    answered(&intranet).await;
    assert_eq!(net.dials().len(), 1);
    let meta = net
        .transport(&format!("http://meta.test:{}/mcp", server.port()), None)
        .allow_private_networks();
    let err = meta.send(&call_request(1)).await.expect_err("link-local");
    assert_eq!(refused(err), blocked(METADATA, AddressClass::LinkLocal));
    assert_eq!(net.dials().len(), 1);
}

#[tokio::test]
async fn d47_a_mixed_answer_is_refused_whole() {
    let (server, _) = raw_server(|_| http("200 OK", "application/json", OK_BODY)).await;
    let net = Net::new(server);
    net.answer("mixed.test", &[&[PUBLIC_STAND_IN, "fd00::1"]]);
    let transport = net.transport(&format!("http://mixed.test:{}/mcp", server.port()), None);
    let err = transport.send(&call_request(1)).await.expect_err("mixed");
    assert_eq!(refused(err), blocked("fd00::1", AddressClass::Private));
    assert!(net.dials().is_empty());
}

#[tokio::test]
async fn d47_resolved_addresses_bound_at_and_one_past() {
    let (server, _) = raw_server(|_| http("200 OK", "application/json", OK_BODY)).await;
    let net = Net::new(server);
    let publics: Vec<String> = (1..=MAX_DIAL_ADDRESSES)
        .map(|i| format!("198.51.99.{i}"))
        .collect();
    // At the bound: the last considered address is refused, so nothing is dialed.
    let mut at: Vec<&str> = publics[..MAX_DIAL_ADDRESSES - 1]
        .iter()
        .map(String::as_str)
        .collect();
    at.push(METADATA);
    net.answer("at.test", &[&at]);
    // One past: the refused address is beyond the bound and never considered.
    let mut past: Vec<&str> = publics.iter().map(String::as_str).collect();
    past.push(METADATA);
    net.answer("past.test", &[&past]);
    let port = server.port();
    let err = net
        .transport(&format!("http://at.test:{port}/mcp"), None)
        .send(&call_request(1))
        .await
        .expect_err("at");
    assert_eq!(refused(err), blocked(METADATA, AddressClass::LinkLocal));
    assert!(net.dials().is_empty());
    let transport = net.transport(&format!("http://past.test:{port}/mcp"), None);
    transport.send(&call_request(1)).await.expect("past");
    answered(&transport).await;
    assert_eq!(net.dials(), [SocketAddr::new(ip("198.51.99.1"), port)]);
}

#[tokio::test]
async fn d47_an_unknown_name_and_a_refused_port_are_typed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let closed = listener.local_addr().expect("addr");
    drop(listener);
    let net = Net::new(closed);
    let err = net
        .transport("http://nowhere.test/mcp", None)
        .send(&call_request(1))
        .await
        .expect_err("unknown");
    assert_eq!(
        refused(err),
        HttpError::Dial(DialError::Resolve {
            kind: io::ErrorKind::NotFound
        })
    );
    net.answer("empty.test", &[&[]]);
    let err = net
        .transport("http://empty.test/mcp", None)
        .send(&call_request(1))
        .await
        .expect_err("empty");
    assert_eq!(refused(err), HttpError::Dial(DialError::NoAddress));
    let err = HttpTransport::new(&format!("http://{closed}/mcp"), None)
        .expect("transport")
        .send(&call_request(1))
        .await
        .expect_err("refused port");
    assert_eq!(
        refused(err),
        HttpError::Dial(DialError::Connect {
            kind: io::ErrorKind::ConnectionRefused
        })
    );
}

/// The decorator every secrets test uses: the values must never surface in an error.
fn secret_decorator() -> Decorator {
    Arc::new(|_, d| {
        d.insert("Authorization", "Bearer s3cret-token")?;
        d.insert("Cookie", "sid=s3cret-cookie")
    })
}

fn assert_no_secret(what: &str, err: &TransportError) {
    let text = format!("{err} {err:?}");
    assert!(!text.contains("s3cret"), "{what}: {text}");
}

#[tokio::test]
async fn d47_errors_never_contain_authorization_or_cookie_values() {
    let (server, heads) = raw_server(|head| {
        if head.starts_with("POST /status ") {
            http(
                "401 Unauthorized",
                "text/plain",
                b"Bearer s3cret-token rejected",
            )
        } else if head.starts_with("POST /found ") {
            redirect("302 Found", "/mcp")
        } else if head.starts_with("POST /type ") {
            http("200 OK", "text/html", b"sid=s3cret-cookie")
        } else {
            http("200 OK", "application/json", b"{\"s3cret\":")
        }
    })
    .await;
    let net = Net::new(server);
    net.answer("evil.test", &[&[METADATA]]);
    let blocked_err = net
        .transport("http://evil.test/mcp", Some(secret_decorator()))
        .send(&call_request(1))
        .await
        .expect_err("blocked");
    assert_no_secret("blocked", &blocked_err);
    for (path, expected) in [
        (
            "status",
            HttpError::Unauthorized {
                status: 401,
                www_authenticate: Vec::new(),
                dropped: 0,
                dpop_nonce: None,
            },
        ),
        ("found", HttpError::Redirect { status: 302 }),
        ("type", HttpError::ContentType),
    ] {
        let transport =
            HttpTransport::new(&format!("http://{server}/{path}"), Some(secret_decorator()))
                .expect("transport");
        assert_no_secret("transport", &TransportError::Closed);
        assert!(!format!("{transport:?}").contains("s3cret"));
        let err = transport.send(&call_request(1)).await.expect_err(path);
        assert_no_secret(path, &err);
        assert_eq!(refused(err), expected);
    }
    let transport = HttpTransport::new(&format!("http://{server}/body"), Some(secret_decorator()))
        .expect("transport");
    let err = transport
        .send(&call_request(1))
        .await
        .expect_err("bad body");
    assert_no_secret("body", &err);
    assert!(matches!(refused(err), HttpError::Decode(_)));
    // The secrets did go on the wire, to the server they were meant for.
    let heads = heads.lock().unwrap();
    assert_eq!(heads.len(), 4);
    assert!(heads
        .iter()
        .all(|h| h.contains("authorization: Bearer s3cret-token")
            && h.contains("cookie: sid=s3cret-cookie")));
}

#[cfg(feature = "https")]
mod https {
    use super::*;

    use hyper_util::rt::{TokioExecutor, TokioIo};
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    use strict_mcp::client::http::tls::{CertificateFault, TlsError};
    use strict_mcp::client::{CallOptions, Client, ClientOptions};
    use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
    use strict_mcp::server::http::{HttpConfig, McpHttp};
    use strict_mcp::server::{Server, ServerOptions};
    use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio_rustls::rustls::{self, ServerConfig};
    use tokio_rustls::TlsAcceptor;

    /// A test CA (DER) and a server configuration whose leaf it signed for `names`.
    fn pki(names: &[&str]) -> (Vec<u8>, Arc<ServerConfig>) {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("ca key"))
            .expect("ca");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let leaf = CertificateParams::new(names)
            .expect("leaf params")
            .signed_by(&leaf_key, &ca)
            .expect("leaf");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(vec![leaf.der().clone()], key)
                .expect("server config");
        (ca.der().to_vec(), Arc::new(config))
    }

    /// A loopback TLS server answering one canned request per connection.
    async fn tls_raw_server(config: Arc<ServerConfig>) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, kept) = (acceptor.clone(), Arc::clone(&kept));
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let answer = |_: &str| http("200 OK", "application/json", OK_BODY);
                    answer_one(tls, &answer, &kept).await;
                });
            }
        });
        (addr, heads)
    }

    #[tokio::test]
    async fn d47_https_with_the_custom_ca_succeeds_for_an_ip_and_a_name() {
        let (ca, config) = pki(&["localhost", "127.0.0.1"]);
        let (server, heads) = tls_raw_server(config).await;
        let transport = HttpTransport::new(&format!("https://{server}/mcp"), None)
            .expect("https accepted")
            .add_root_certificate(&ca)
            .expect("ca");
        transport.send(&call_request(1)).await.expect("over TLS");
        answered(&transport).await;
        // By name (SNI and the name check), through the injected resolver.
        let net = Net::new(server);
        net.answer("localhost", &[&["127.0.0.1"]]);
        let named = net
            .transport(&format!("https://localhost:{}/mcp", server.port()), None)
            .only_custom_roots()
            .expect("only custom")
            .add_root_certificate(&ca)
            .expect("ca");
        named.send(&call_request(1)).await.expect("by name");
        answered(&named).await;
        assert_eq!(heads.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn d47_https_without_the_ca_or_for_another_name_is_refused_typed() {
        let (ca, config) = pki(&["localhost"]);
        let (server, heads) = tls_raw_server(config).await;
        let url = format!("https://{server}/mcp");
        let err = HttpTransport::new(&url, Some(secret_decorator()))
            .expect("transport")
            .send(&call_request(1))
            .await
            .expect_err("unknown issuer");
        assert_no_secret("tls", &err);
        assert_eq!(
            refused(err),
            HttpError::Dial(DialError::Tls(TlsError::Certificate(
                CertificateFault::UnknownIssuer
            )))
        );
        // Trusted CA, but the certificate names localhost, not 127.0.0.1.
        let err = HttpTransport::new(&url, None)
            .expect("transport")
            .add_root_certificate(&ca)
            .expect("ca")
            .send(&call_request(1))
            .await
            .expect_err("wrong name");
        assert_eq!(
            refused(err),
            HttpError::Dial(DialError::Tls(TlsError::Certificate(
                CertificateFault::NotValidForName
            )))
        );
        // Only the custom roots, and none added: nothing is trusted.
        let err = HttpTransport::new(&url, None)
            .expect("transport")
            .only_custom_roots()
            .expect("only custom")
            .send(&call_request(1))
            .await
            .expect_err("no roots");
        assert!(matches!(refused(err), HttpError::Dial(DialError::Tls(_))));
        assert!(heads.lock().unwrap().is_empty(), "no request crossed");
        assert_eq!(
            HttpTransport::new(&url, None)
                .expect("transport")
                .add_root_certificate(b"not a certificate")
                .err(),
            Some(HttpError::Dial(DialError::Tls(
                TlsError::BadRootCertificate
            )))
        );
    }

    #[tokio::test]
    async fn d47_a_plain_http_answer_on_an_https_url_is_a_handshake_error() {
        // A plain HTTP server that answers at once, before reading (a ClientHello has no
        // blank line, so a server waiting for a request head would wait forever).
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let server = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket
                    .write_all(&http("400 Bad Request", "text/plain", b"plain"))
                    .await;
                let _ = socket.shutdown().await;
            }
        });
        let err = HttpTransport::new(&format!("https://{server}/mcp"), None)
            .expect("transport")
            .send(&call_request(1))
            .await
            .expect_err("not TLS");
        assert_eq!(
            refused(err),
            HttpError::Dial(DialError::Tls(TlsError::Handshake))
        );
    }

    #[tokio::test]
    async fn d2_the_client_discovers_and_lists_over_https_against_our_host() {
        let (ca, config) = pki(&["127.0.0.1"]);
        let registry = RegistryBuilder::new()
            .tool(ToolDef::typed(
                "noop",
                |_: Invocation, _: NoInput| async move {
                    Ok(NoOutput {
                        text: String::new(),
                    })
                },
            ))
            .build()
            .expect("registry");
        let server = Server::new(registry, ServerOptions::new().mode("direct")).expect("server");
        let service = McpHttp::new(server, HttpConfig::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, service) = (acceptor.clone(), service.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let transport = Arc::new(
            HttpTransport::new(&format!("https://{addr}/mcp"), None)
                .expect("transport")
                .add_root_certificate(&ca)
                .expect("ca"),
        );
        let client = Client::connect(transport, ClientOptions::default())
            .await
            .expect("discover over TLS");
        let tools = client
            .list_tools(&CallOptions::default())
            .await
            .expect("list over TLS");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["noop"]);
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoInput {}

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct NoOutput {
        /// The text.
        text: String,
    }
}

/// A connector that answers "refused" after `delay` of (virtual) time, or never.
struct SlowConnect(Option<std::time::Duration>);

impl Connect for SlowConnect {
    fn connect(&self, _addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        let delay = self.0;
        Box::pin(async move {
            match delay {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending::<()>().await,
            }
            Err(io::ErrorKind::ConnectionRefused.into())
        })
    }
}

/// A silent peer cannot hold a send past the dial limit, and a bare transport (no client,
/// no request deadline) still fails: at the limit minus 1 ms the connector's own answer
/// arrives; at the limit plus 1 ms, and for a connector that never answers, the dial times out.
#[tokio::test(start_paused = true)]
async fn dial_timeout_bounds_a_silent_connect_at_the_limit_and_one_past() {
    let ms = std::time::Duration::from_millis(1);
    assert_eq!(DIAL_TIMEOUT, std::time::Duration::from_secs(10));
    let cases = [
        (
            Some(DIAL_TIMEOUT - ms),
            DialError::Connect {
                kind: io::ErrorKind::ConnectionRefused,
            },
        ),
        (
            Some(DIAL_TIMEOUT + ms),
            DialError::Timeout {
                limit: DIAL_TIMEOUT,
            },
        ),
        (
            None,
            DialError::Timeout {
                limit: DIAL_TIMEOUT,
            },
        ),
    ];
    for (delay, expected) in cases {
        let err = HttpTransport::new("http://127.0.0.1:9/mcp", None)
            .expect("transport")
            .with_connector(Arc::new(SlowConnect(delay)))
            .send(&call_request(1))
            .await
            .expect_err("no connection");
        assert_eq!(refused(err), HttpError::Dial(expected), "delay {delay:?}");
    }
    // Configurable per transport.
    let limit = std::time::Duration::from_millis(250);
    let err = HttpTransport::new("http://127.0.0.1:9/mcp", None)
        .expect("transport")
        .dial_timeout(limit)
        .with_connector(Arc::new(SlowConnect(None)))
        .send(&call_request(1))
        .await
        .expect_err("no connection");
    assert_eq!(refused(err), HttpError::Dial(DialError::Timeout { limit }));
}
