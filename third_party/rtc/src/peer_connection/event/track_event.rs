//! Track event types.
//!
//! Events related to incoming media tracks from the remote peer.

use crate::media_stream::MediaStreamId;
use crate::media_stream::track::MediaStreamTrackId;
use crate::rtp_transceiver::{RTCRtpReceiverId, RtpStreamId};

/// Initialization data for a track event.
///
/// Contains IDs needed to access the track, receiver, transceiver, and
/// associated media streams when a track is opened.
///
/// # Fields
///
/// - `receiver_id` - ID of the RTP receiver handling this track
/// - `track_id` - ID of the media stream track
/// - `stream_ids` - IDs of media streams this track belongs to
/// - `rid` - RTP Stream ID for simulcast/SVC (if applicable)
///
/// # Examples
///
/// ## Accessing track components
///
/// ```
/// // Note: accessing the receiver requires `&mut RTCPeerConnection`
/// use rtc::peer_connection::RTCPeerConnection;
/// use rtc::peer_connection::event::{RTCPeerConnectionEvent, RTCTrackEvent};
///
/// fn handle_event(peer_connection: &mut RTCPeerConnection, event: RTCPeerConnectionEvent) {
///     if let RTCPeerConnectionEvent::OnTrack(RTCTrackEvent::OnOpen(init)) = event {
///         // Access the receiver
///         if let Some(mut receiver) = peer_connection.rtp_receiver(init.receiver_id) {
///             // Get receiver parameters
///             let params = receiver.get_parameters();
///             println!("Codecs: {:?}", params.rtp_parameters.codecs);
///         }
///
///         // Print associated stream IDs
///         println!("Stream IDs: {:?}", init.stream_ids);
///
///         // Check if this is a simulcast stream
///         if let Some(rid) = &init.rid {
///             println!("Simulcast RID: {}", rid);
///         }
///     }
/// }
/// ```
#[allow(clippy::enum_variant_names)]
#[derive(Default, Debug, Clone)]
pub struct RTCTrackEventInit {
    /// ID of the RTP receiver handling this track.
    ///
    /// Use this with `peer_connection.rtp_receiver()` to access the receiver.
    pub receiver_id: RTCRtpReceiverId,

    /// ID of the media stream track.
    ///
    /// This uniquely identifies the track within the peer connection.
    pub track_id: MediaStreamTrackId,

    /// IDs of media streams this track belongs to.
    ///
    /// A track can be associated with multiple media streams.
    /// These correspond to the msid attribute in the SDP.
    pub stream_ids: Vec<MediaStreamId>,

    /// SSRC of the first RTP packet that triggered this OnOpen event.
    ///
    /// This is always populated when `OnOpen` fires (since it fires on receipt of the
    /// first RTP packet for this stream). Use this value when sending RTCP feedback
    /// such as PLI or NACK targeted at this specific stream.
    pub ssrc: u32,

    /// RTP Stream ID (RID) for simulcast/SVC streams.
    ///
    /// In simulcast scenarios, this identifies which spatial/temporal layer this stream represents.
    /// The value comes from the RTP header extension (urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id)
    /// in the first received RTP packet.
    ///
    /// - `None` - Non-simulcast track, or simulcast track before first RTP packet received
    /// - `Some(rid)` - Simulcast stream identifier (e.g., "q", "h", "f" for quality levels)
    pub rid: Option<RtpStreamId>,
}

/// Events related to incoming media tracks.
///
/// These events track the lifecycle of media tracks received from the remote peer.
/// Applications should handle these events to access incoming audio/video streams
/// and read RTP/RTCP packets.
///
/// # Lifecycle
///
/// 1. `OnOpen` - Track is ready, contains initialization data
/// 2. `OnError` - An error occurred with the track
/// 3. `OnClosing` - Track is starting to close
/// 4. `OnClose` - Track is fully closed
///
/// # Examples
///
/// ## Handling track lifecycle
///
/// ```
/// use rtc::peer_connection::event::{RTCPeerConnectionEvent, RTCTrackEvent};
///
/// # fn handle_event(event: RTCPeerConnectionEvent) {
/// match event {
///     RTCPeerConnectionEvent::OnTrack(track_event) => {
///         match track_event {
///             RTCTrackEvent::OnOpen(init) => {
///                 println!("Track opened: {:?}", init.track_id);
///                 // Start reading RTP packets
///             }
///             RTCTrackEvent::OnError(track_id) => {
///                 eprintln!("Track error: {:?}", track_id);
///             }
///             RTCTrackEvent::OnClose(track_id) => {
///                 println!("Track closed: {:?}", track_id);
///                 // Clean up resources
///             }
///             _ => {}
///         }
///     }
///     _ => {}
/// }
/// # }
/// ```
///
/// ## Reading media from track
///
/// `poll_event()` and `poll_read()` come from the [`sansio::Protocol`] implementation on
/// [`RTCPeerConnection`](crate::peer_connection::RTCPeerConnection), so that trait must be
/// in scope.
///
/// ```
/// use rtc::peer_connection::RTCPeerConnection;
/// use rtc::peer_connection::event::{RTCPeerConnectionEvent, RTCTrackEvent};
/// use rtc::peer_connection::message::{RTCMessage, TaggedRTCMessage};
/// use rtc::sansio::Protocol;
///
/// fn handle_events(peer_connection: &mut RTCPeerConnection) {
///     // Poll events
///     while let Some(event) = peer_connection.poll_event() {
///         if let RTCPeerConnectionEvent::OnTrack(RTCTrackEvent::OnOpen(_init)) = event {
///             println!("Track opened, ready to receive media");
///         }
///     }
///
///     // Poll incoming media. Both RTP and RTCP are tagged with the *track* id they
///     // belong to.
///     while let Some(TaggedRTCMessage { message, .. }) = peer_connection.poll_read() {
///         match message {
///             RTCMessage::RtpPacket(track_id, rtp) => {
///                 println!("RTP packet from track {:?}: {} bytes", track_id, rtp.payload.len());
///             }
///             RTCMessage::RtcpPacket(track_id, rtcp) => {
///                 println!("RTCP packet for track {:?}: {:?}", track_id, rtcp);
///             }
///             _ => {}
///         }
///     }
/// }
/// ```
///
/// # Specification
///
/// See [RTCTrackEvent](https://www.w3.org/TR/webrtc/#rtctrackevent)
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RTCTrackEvent {
    /// Track has opened and is ready to receive media.
    ///
    /// This variant contains initialization data with IDs to access
    /// the track, receiver, transceiver, and associated streams.
    OnOpen(RTCTrackEventInit),

    /// An error occurred with the track.
    ///
    /// The track may still be usable depending on the error type.
    OnError(MediaStreamTrackId),

    /// Track is starting to close.
    ///
    /// The track is transitioning to the closing state.
    OnClosing(MediaStreamTrackId),

    /// Track has closed.
    ///
    /// The track is no longer usable and resources should be cleaned up.
    OnClose(MediaStreamTrackId),
}

impl Default for RTCTrackEvent {
    fn default() -> Self {
        Self::OnOpen(Default::default())
    }
}
