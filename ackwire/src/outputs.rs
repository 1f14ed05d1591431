//! The member's outputs, carried out: the one loop both drivers run after each step of the
//! room member. Which output asks for what is read here, once; a driver supplies only its
//! hands (its signalling socket, its transports, the queue where the game's events wait) as a
//! [`Carrier`].

use ackwire_room::member::{Command, Event, Member, MemberFrame, Output, Route};
use ackwire_signalling::UrlJoin;

/// What a driver does for each of the member's outputs.
pub(crate) trait Carrier {
    /// The member whose outputs these are.
    fn member(&mut self) -> &mut Member;

    /// Opens the signalling socket (in place of any open one), with `join` in its URL when
    /// it is a fresh join.
    fn open_signalling(&mut self, join: Option<UrlJoin>);

    /// Closes the signalling socket; whatever it still reports is ignored.
    fn close_signalling(&mut self);

    /// Sends a frame on the signalling socket (dropped if the socket is not open).
    fn send_frame(&mut self, frame: &MemberFrame);

    /// Opens, signals or closes a peer connection.
    fn run_command(&mut self, command: Command);

    /// Sends one datagram on `route` (lost, as on a dead path, if it leads nowhere).
    fn transmit(&mut self, route: Route, datagram: &[u8]);

    /// Queues an event for the game.
    fn queue_event(&mut self, event: Event);
}

/// Carries out what the member asked for, in the order it asked, until it asks nothing more.
pub(crate) fn carry_out(carrier: &mut impl Carrier) {
    while let Some(output) = carrier.member().poll_output() {
        match output {
            Output::OpenSignalling { join } => carrier.open_signalling(join),
            Output::CloseSignalling => carrier.close_signalling(),
            Output::Frame(frame) => carrier.send_frame(&frame),
            Output::Command(command) => carrier.run_command(command),
            Output::Transmit { route, datagram } => {
                carrier.transmit(route, &datagram);
                // The buffer goes back to the member: the next datagram needs no allocation.
                carrier.member().recycle(datagram);
            }
            Output::Event(event) => carrier.queue_event(event),
        }
    }
}
