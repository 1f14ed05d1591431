use tracing::debug;
use wtransport_proto::bytes::IoReadError;
use wtransport_proto::capsule::capsules;
use wtransport_proto::capsule::Capsule;
use wtransport_proto::capsule::{self};
use wtransport_proto::error::ErrorCode;
use wtransport_proto::frame::FrameKind;
use wtransport_proto::varint::VarInt;

use super::session::StreamSession;
use super::ProtoReadError;
use crate::driver::DriverError;
use crate::error::ApplicationClose;
use std::future::pending;
use std::future::Future;
use std::pin::Pin;
use wtransport_proto::frame::Frame;

// ackwire patch: a frame read in progress, which owns the stream until the frame is whole.
type FrameRead =
    Pin<Box<dyn Future<Output = (StreamSession, Result<Frame<'static>, ProtoReadError>)> + Send>>;

pub struct ConnectStream {
    stream: Option<StreamSession>,
    reading: Option<FrameRead>,
}

impl ConnectStream {
    pub fn empty() -> Self {
        Self {
            stream: None,
            reading: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.stream.is_none() && self.reading.is_none()
    }

    pub fn set_stream(&mut self, stream: StreamSession) {
        self.stream = Some(stream);
    }

    // ackwire patch: cancel-safe, as `RemoteSettingsStream::read_frame` (settings.rs): the
    // worker's `select!` drops `run` whenever another branch is ready, a datagram's arrival
    // among them, so a frame read in steps is kept here and resumed, not lost halfway.
    async fn read_frame(&mut self) -> Result<Frame<'static>, ProtoReadError> {
        if self.reading.is_none() {
            let Some(mut stream) = self.stream.take() else {
                return pending().await;
            };
            self.reading = Some(Box::pin(async move {
                let frame = stream.read_frame().await;
                (stream, frame)
            }));
        }
        let (stream, frame) = self.reading.as_mut().expect("a read in progress").await;
        self.reading = None;
        self.stream = Some(stream);
        frame
    }

    pub async fn run(&mut self) -> DriverError {
        loop {
            return match self.read_frame().await {
                Ok(frame) => {
                    if !matches!(frame.kind(), FrameKind::Data) {
                        debug!("Skipping non-data frame of kind {:?}", frame.kind());
                        continue;
                    }

                    let capsule = match Capsule::with_frame(&frame) {
                        Some(capsule)
                            if matches!(
                                capsule.kind(),
                                capsule::CapsuleKind::CloseWebTransportSession
                            ) =>
                        {
                            capsule
                        }
                        // Unknown capsule, skip it
                        _ => {
                            debug!(
                                "Unknown capsule of kind {:?} of {}B",
                                frame.kind(),
                                frame.payload().len()
                            );

                            continue;
                        }
                    };

                    let close_session =
                        match capsules::CloseWebTransportSession::with_capsule(&capsule) {
                            Ok(close_session) => close_session,
                            Err(error_code) => return DriverError::Proto(error_code),
                        };

                    // reset right away to avoid receiving additional data which requires resetting with ErrorCode::Message.
                    self.stream
                        .take()
                        .unwrap()
                        .reset(ErrorCode::NoError.to_code());

                    DriverError::ApplicationClosed(ApplicationClose::new(
                        close_session.error_code(),
                        close_session
                            .reason()
                            .as_bytes()
                            .to_vec()
                            .into_boxed_slice(),
                    ))
                }
                Err(ProtoReadError::H3(error_code)) => DriverError::Proto(error_code),
                Err(ProtoReadError::IO(io_error)) => match io_error {
                    // Cleanly terminating a CONNECT stream without a CLOSE_WEBTRANSPORT_SESSION
                    // capsule SHALL be semantically equivalent to terminating it with a
                    // CLOSE_WEBTRANSPORT_SESSION capsule that has an error code of 0 and an empty error string.
                    IoReadError::ImmediateFin => DriverError::ApplicationClosed(
                        ApplicationClose::new(VarInt::from_u32(0), Box::new([])),
                    ),
                    IoReadError::UnexpectedFin | IoReadError::Reset => {
                        DriverError::Proto(ErrorCode::ClosedCriticalStream)
                    }
                    IoReadError::NotConnected => DriverError::NotConnected,
                },
            };
        }
    }
}
