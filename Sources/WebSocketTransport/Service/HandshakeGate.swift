import DequeModule

/// Counts, per peer address, the TCP connections whose handshake has stalled: no complete WebSocket upgrade (plain
/// HTTP connections until they close) `stallNanoseconds` after they were accepted. They hold one of lws' header
/// tables each, and one address must not hold them all: a slowloris opens thousands of connections and sends half
/// a request each. Handshakes that complete within that time are not counted, so a burst of quick connects from one
/// address (a load tester, an office behind one NAT address opening a shared page at 9:00) is not refused. Touched
/// only on the service thread.
struct HandshakeGate {
    /// Stalled handshakes one address may have; nil: no cap.
    let maxPerAddress: Int?
    /// How long a handshake may take before it counts as stalled.
    static let stallNanoseconds: UInt64 = 1_000_000_000

    private struct Handshake {
        let address: String
        /// Tells this handshake from an earlier one whose key (a freed lws connection's address) it reuses.
        let serial: UInt64
        var stalled = false
    }

    private var handshakes: [UInt: Handshake] = [:]
    /// Handshakes in the order they began, to find those that stall: each is looked at once, when it comes of age
    /// (those that ended by then are skipped), so the cost per connection is constant.
    private var byAge = Deque<(key: UInt, serial: UInt64, began: UInt64)>()
    private var stalledPerAddress: [String: Int] = [:]
    private var serials: UInt64 = 0

    init(maxPerAddress: Int?) {
        self.maxPerAddress = maxPerAddress
    }

    /// Whether a new connection from `address` may start a handshake at `now` (uptime, ns).
    mutating func admits(_ address: String, now: UInt64) -> Bool {
        guard let maxPerAddress else { return true }
        countStalled(now: now)
        return stalledPerAddress[address, default: 0] < maxPerAddress
    }

    /// The connection `key` from `address` started its handshake at `now` (uptime, ns).
    mutating func began(_ key: UInt, from address: String, at now: UInt64) {
        guard handshakes[key] == nil else { return }
        serials += 1
        handshakes[key] = Handshake(address: address, serial: serials)
        byAge.append((key, serials, now))
    }

    /// The connection `key` completed its handshake or closed; unknown keys are ignored.
    mutating func ended(_ key: UInt) {
        guard let handshake = handshakes.removeValue(forKey: key), handshake.stalled else { return }
        let remaining = stalledPerAddress[handshake.address, default: 1] - 1
        stalledPerAddress[handshake.address] = remaining > 0 ? remaining : nil
    }

    /// Counts the handshakes that have been going on for `stallNanoseconds` by `now`.
    private mutating func countStalled(now: UInt64) {
        while let oldest = byAge.first, now &- oldest.began >= Self.stallNanoseconds {
            byAge.removeFirst()
            guard var handshake = handshakes[oldest.key], handshake.serial == oldest.serial else { continue }
            handshake.stalled = true
            handshakes[oldest.key] = handshake
            stalledPerAddress[handshake.address, default: 0] += 1
        }
    }
}
