/// Holds a table's next intent back while the server's fan-out is far behind, so that writers are paced by what
/// subscribers can take instead of queueing updates without end: with ten thousand subscribers on a table a writer
/// can commit faster than the updates reach everyone, and each one's queue would grow until every subscriber is
/// closed as a slow reader (4000) at once. Writers see their acks later instead; beyond `--max-queued-intents` they
/// get `rate_limited`.
///
/// The measure is the transport's outbound backlog (messages not yet written, at most 64 per connection, so readers
/// that stopped reading weigh little). A wait starts above ``highWater(connections:)`` and ends below half of it,
/// or once the backlog has not shrunk for ``stallLimit``: then what holds it up is readers that do not read (they
/// are closed at their own bound), not the server's writing, and waiting longer would let them stop every writer.
struct FanOutPacing {
    /// Messages per connection, on average, that the backlog may hold before intents wait.
    static let perConnection = 16
    /// The least backlog that makes intents wait, whatever the number of connections.
    static let floor = 4096
    static let stallLimit = Duration.milliseconds(50)

    /// The backlog above which the next intent waits.
    static func highWater(connections: Int) -> Int { max(floor, perConnection * connections) }

    private let lowWater: Int
    private var lowest: Int
    private var sinceProgress = Duration.zero

    /// A wait that starts at `backlog`; nil when there is no need to wait.
    init?(backlog: Int, connections: Int) {
        let high = Self.highWater(connections: connections)
        guard backlog > high else { return nil }
        lowWater = high / 2
        lowest = backlog
    }

    /// The backlog is `backlog` after another `interval` of waiting: whether to keep waiting.
    mutating func keepWaiting(backlog: Int, after interval: Duration) -> Bool {
        guard backlog > lowWater else { return false }
        if backlog < lowest {
            lowest = backlog
            sinceProgress = .zero
        } else {
            sinceProgress += interval
        }
        return sinceProgress < Self.stallLimit
    }
}
