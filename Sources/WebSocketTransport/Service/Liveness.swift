/// Whether a connection's peer is still there, as the service loop's once-a-second sweep judges it (see
/// `ServiceLoop.sweepIdleConnections`): a peer silent for `pingAfterSeconds` sweeps is sent a PING, and one silent
/// for `hangUpAfterSeconds` is hung up on. Any bytes read from the peer count as hearing from it, its PONG too.
///
/// lws 4.1 can do this itself, but it keeps every connection's idle timer in one list sorted by time and inserts by
/// walking that list from its head. A timer reset lands behind every other, so each reset walked past all of the
/// connections: O(connections) per connection per second of traffic, and connecting N clients cost O(N²) (two
/// thirds of the load tool's CPU with 8,000 subscribers). Here hearing from the peer sets a flag, and the sweep
/// costs O(1) per connection.
struct Liveness {
    /// The idle spans, in whole seconds (sweeps).
    struct Policy: Sendable {
        let pingAfterSeconds: Int
        let hangUpAfterSeconds: Int

        /// At least one second before the PING and one more before the hang-up.
        init(pingAfterSeconds: Int, hangUpAfterSeconds: Int) {
            self.pingAfterSeconds = max(1, pingAfterSeconds)
            self.hangUpAfterSeconds = max(self.pingAfterSeconds + 1, hangUpAfterSeconds)
        }
    }

    enum Action: Equatable {
        case none
        case ping
        case hangUp
    }

    /// Something was read from the peer since the last sweep (a new connection counts as just heard).
    private var heard = true
    /// Sweeps in a row that found nothing read.
    private var silentSweeps = 0

    /// Bytes arrived from the peer.
    mutating func heardFromPeer() {
        heard = true
    }

    /// One second passed. A peer heard from since the last sweep starts a new silence, so a PING goes out after
    /// between `pingAfterSeconds` and one second more of silence, and the hang-up likewise.
    mutating func sweep(_ policy: Policy) -> Action {
        if heard {
            heard = false
            silentSweeps = 0
            return .none
        }
        silentSweeps += 1
        if silentSweeps >= policy.hangUpAfterSeconds { return .hangUp }
        return silentSweeps == policy.pingAfterSeconds ? .ping : .none
    }
}
