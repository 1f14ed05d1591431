//! Stats reports: once a period every link's core stats go to the server for dashboards (as
//! server ids, the names dashboards know) and to the application ([`Event::Stats`]).

use std::time::Duration;

use ackwire_core::Stats;
use serde::Serialize;

use super::{Event, Failure, LinkState, Member, ServerId, TransportKind};
use crate::signalling::ClientFrame;

/// Links in one `stats` frame at most. A link's report is about 700 bytes of JSON, so a frame
/// stays under the server's default message cap (16 KiB) however many links a host holds:
/// a larger report goes out as several frames in the same period, each naming its links
/// (dashboards key a report by its link).
pub const REPORT_LINKS_PER_FRAME: usize = 16;

/// One link in a member's stats report (`stats` frames, forwarded to dashboards; see
/// `docs/signalling.md`, "Stats").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// The peer at the other end.
    pub peer: ServerId,
    /// UDP or WebRTC.
    pub transport: TransportKind,
    /// Where the link is in its life.
    pub state: LinkState,
    /// Why it was last lost.
    pub reason: Option<Failure>,
    /// WebRTC: the selected path's candidate type (`host`, `srflx`, `relay`).
    pub ice: Option<String>,
    /// The core's stats, once the protocol runs.
    pub stats: Option<Stats>,
    /// What this member emulates on all its links (each way); `None` for a real link.
    pub emulation: Option<EmulationReport>,
}

/// The link emulator's settings in a stats report, so a dashboard can say which player runs
/// `?loss=10`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EmulationReport {
    /// Added one-way delay.
    pub latency_ms: f64,
    /// Random extra delay, up to this.
    pub jitter_ms: f64,
    /// Datagrams dropped, in percent.
    pub loss_percent: f64,
}

impl Member {
    pub(super) fn report_stats(&mut self, now: Duration) {
        let links = self.links(now);
        // What this member emulates on all its links (each way), so a dashboard can say
        // which player runs `?loss=10`; `null` for real links.
        let emulation = self.config.emulation.as_ref().map(|e| EmulationReport {
            latency_ms: e.config.latency.as_secs_f64() * 1000.0,
            jitter_ms: e.config.jitter.as_secs_f64() * 1000.0,
            loss_percent: e.config.loss_percent,
        });
        let reports: Vec<LinkReport> = links
            .iter()
            .filter_map(|l| {
                Some(LinkReport {
                    peer: l.server_id?,
                    transport: l.transport,
                    state: l.state,
                    reason: l.reason.clone(),
                    ice: l.candidate.clone(),
                    stats: l.stats.clone(),
                    emulation,
                })
            })
            .collect();
        for chunk in reports.chunks(REPORT_LINKS_PER_FRAME) {
            self.send_frame(ClientFrame::Stats {
                from: None,
                links: chunk.to_vec(),
            });
        }
        self.event(Event::Stats { links });
    }
}
