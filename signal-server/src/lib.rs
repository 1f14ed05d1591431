//! `ackwire-signal`: rooms, WebSocket signalling (`/ws`), pages, `/metrics` and live stats
//! fan-out for dashboards. The wire protocol is documented in `docs/signalling.md`.
//!
//! The binary is a thin wrapper around [`serve`]; tests call it on a `127.0.0.1:0` listener.

pub mod admission;
pub mod broker;
pub mod config;
pub mod error;
pub mod metrics;
pub mod pages;
pub mod protocol;
pub mod rooms;
pub mod session;
pub mod tickets;
pub mod tls;
pub mod turn;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    http::header,
    response::{IntoResponse, Response},
    routing::get,
    serve::ListenerExt,
};
use tokio::{net::TcpListener, sync::watch};

pub use config::Config;
pub use error::SignalError;

use crate::{
    metrics::Metrics,
    pages::{Assets, Source},
    rooms::Hub,
    tickets::TicketSecret,
};

/// Shared by every request handler.
#[derive(Debug, Clone)]
pub struct AppState {
    hub: Arc<Hub>,
    /// The server listens on a loopback address (see [`Config::admin_token`]).
    loopback: bool,
    assets: Arc<Assets>,
    /// Flips to `true` when the server shuts down; sessions then close with "going away".
    shutdown: watch::Receiver<bool>,
}

/// The router: pages, assets, `/ws`, `/healthz`, `/metrics`. `local` is the address the
/// server listens on (a loopback one opens the all-rooms dashboard without a token). An error
/// when the ticket secret cannot be read ([`Config::tickets`]).
pub fn app(
    config: Config,
    local: SocketAddr,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<Router> {
    let metrics = Arc::new(Metrics::new(config.redis.is_some(), false));
    let tickets = config.tickets().map_err(invalid_input)?;
    Ok(app_with_metrics(config, local, shutdown, metrics, tickets))
}

fn invalid_input(err: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, err)
}

/// [`app`], counting into `metrics` (which [`serve`] shares with its TLS listener), checking
/// joins' tickets with `tickets` if given.
fn app_with_metrics(
    config: Config,
    local: SocketAddr,
    shutdown: watch::Receiver<bool>,
    metrics: Arc<Metrics>,
    tickets: Option<TicketSecret>,
) -> Router {
    let assets = Assets::new(match &config.web_dir {
        Some(dir) => Source::Disk(dir.clone()),
        None => Source::Embedded,
    });
    let config = Arc::new(config);
    let hub = Arc::new(Hub::new(config.clone(), Arc::clone(&metrics)).with_tickets(tickets));
    if let Some(url) = &config.redis {
        match broker::Broker::start(url, &hub, metrics) {
            Ok(broker) => hub.set_broker(broker),
            // The config checked the URL; a client that still cannot be made leaves joins
            // refused rather than rooms split.
            Err(err) => tracing::error!(%err, "cannot use the broker"),
        }
    }
    let state = AppState {
        hub,
        loopback: local.ip().is_loopback(),
        assets: Arc::new(assets),
        shutdown,
    };
    // Pages and assets are compressed; the upgrade and the small endpoints are left alone.
    let mut pages = Router::new()
        .route("/", get(pages::index))
        .route("/new", get(pages::new_room))
        .route("/room/{name}", get(pages::room))
        .route("/room/{name}/dashboard", get(pages::room_dashboard))
        .route("/dashboard", get(pages::dashboard))
        .route("/v/{version}/{*path}", get(pages::versioned));
    let mut mounted = Vec::new();
    for mount in &config.statics {
        // `check` refuses a path given twice; here a repeat would be a router panic.
        if mounted.contains(&&mount.path) {
            continue;
        }
        mounted.push(&mount.path);
        pages = pages::mount_static(pages, mount);
    }
    let pages = pages.fallback(pages::asset).layer(pages::compression());
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .route("/ws", get(session::upgrade))
        .merge(pages)
        .with_state(state)
}

/// `ok`, or 503 when rooms are shared and the broker is out of reach (joins are refused).
async fn healthz(axum::extract::State(app): axum::extract::State<AppState>) -> Response {
    match app.hub.broker() {
        Some(broker) if !broker.healthy() => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "broker unreachable: joins are refused until Redis answers",
        )
            .into_response(),
        _ => "ok".into_response(),
    }
}

async fn metrics_text(
    axum::extract::State(app): axum::extract::State<AppState>,
) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        {
            let metrics = app.hub.metrics();
            let tracked = app.hub.admission().clients();
            metrics
                .clients_tracked
                .set(i64::try_from(tracked).unwrap_or(i64::MAX));
            if let Some(broker) = app.hub.broker() {
                metrics.broker_up.set(i64::from(broker.healthy()));
                if let Ok((rooms, peers)) = broker.totals().await {
                    metrics.shared_rooms.set(rooms);
                    metrics.shared_peers.set(peers);
                }
            }
            metrics.render()
        },
    )
}

/// Serve on `listener` until `shutdown` resolves, then close every WebSocket with
/// "going away" and return. With [`Config::tls_cert`] and [`Config::tls_key`], HTTPS and WSS
/// (see [`tls`]); a certificate or key that cannot be used is an error before anything is
/// served, naming the file.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_until(listener, config, Box::pin(shutdown)).await
}

/// [`serve`]'s body, not generic: a generic `serve` had the whole axum and hyper stack it
/// reaches compiled again in every crate that calls it, once per shutdown future's type
/// (the server's tests spent 139 s of a core on it, most of a CI run's longest compile).
async fn serve_until(
    listener: TcpListener,
    config: Config,
    shutdown: std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>,
) -> std::io::Result<()> {
    config.check().map_err(invalid_input)?;
    let tls = tls::Certificates::load(&config)?;
    let tickets = config.tickets().map_err(invalid_input)?;
    let metrics = Arc::new(Metrics::new(config.redis.is_some(), tls.is_some()));
    // Before "listening" is logged: a SIGHUP from then on reloads, never kills.
    if let Some(certificates) = &tls {
        metrics.tls_expiry.set(certificates.not_after());
        reload_on_sighup(Arc::clone(certificates), Arc::clone(&metrics));
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let local = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let web = match &config.web_dir {
        Some(dir) => dir.display().to_string(),
        None => "(embedded)".to_owned(),
    };
    tracing::info!(addr = %local, url = %format!("{scheme}://{local}/"), web_dir = %web, "listening");
    match tickets.as_ref().map(TicketSecret::scope) {
        Some(tickets::TicketScope::All) => {
            tracing::info!("joins need a ticket from the game's backend (--ticket-secret-file)")
        }
        Some(tickets::TicketScope::Hosts) => tracing::warn!(
            "only hosts need a ticket (--tickets-for hosts): anyone who knows a room's name joins it as a peer or a client"
        ),
        None => tracing::warn!(
            "joins are not authenticated: anyone who knows a room's name joins it (--ticket-secret-file requires join tickets)"
        ),
    }
    let router = app_with_metrics(config, local, stop_rx, Arc::clone(&metrics), tickets);
    // Signalling is many small frames sent back to back (a welcome, then `peer_joined`; an
    // offer, then its candidates): with Nagle's algorithm each waits for the previous one's
    // delayed ACK, ~40 ms.
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(%err, "TCP_NODELAY not set");
        }
    });
    let make_service = router.into_make_service_with_connect_info::<SocketAddr>();
    let stop = async move {
        shutdown.await;
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
        // Give sessions a moment to send their close frames.
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    match tls {
        None => {
            axum::serve(listener, make_service)
                .with_graceful_shutdown(stop)
                .await
        }
        Some(certificates) => {
            // Handshakes run on tasks of their own (see `tls::TlsListener`). The no-op tap is
            // what gives the handlers `ConnectInfo<SocketAddr>`: axum provides it for tapped
            // listeners of any kind.
            let listener = tls::TlsListener::new(listener, certificates, metrics)?.tap_io(|_| {});
            axum::serve(listener, make_service)
                .with_graceful_shutdown(stop)
                .await
        }
    }
}

/// Re-reads the certificate and key on every SIGHUP, as long as the runtime runs: a renewed
/// certificate (certbot's deploy hook: `kill -HUP`) without a restart.
fn reload_on_sighup(certificates: Arc<tls::Certificates>, metrics: Arc<Metrics>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(err) => {
                tracing::warn!(%err, "no SIGHUP handler: the certificate reloads only on restart");
                return;
            }
        };
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                let reloaded = certificates.reload();
                metrics.tls_reload(reloaded.is_ok());
                metrics.tls_expiry.set(certificates.not_after());
                match reloaded {
                    Ok(()) => tracing::info!("SIGHUP: TLS certificate and key reloaded"),
                    Err(err) => {
                        tracing::error!(%err, "SIGHUP: TLS reload failed; still serving the previous certificate");
                    }
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (certificates, metrics);
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
