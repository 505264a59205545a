/// Keep-alive HTTP connections waiting for their next request (see ``ServiceLoop/keepAlive(_:)``): O(1) per request,
/// where lws' sorted timer list walks past every other waiting connection, and one entry per connection, however
/// many requests it makes. Connections are named by a key (their lws handle's address, which lws reuses once a
/// connection is gone); time is given (uptime, ns), never read, so tests step it.
struct IdleKeepAlives {
    /// How long a connection may wait for its next request (ns).
    let timeout: UInt64
    /// When each waiting connection started to wait.
    private var since: [UInt: UInt64] = [:]

    init(timeout: Duration) {
        self.timeout = timeout.nanoseconds
    }

    /// How many connections are waiting.
    var count: Int { since.count }

    /// `connection` answered its request and waits for the next one, from `now` on.
    mutating func waiting(_ connection: UInt, at now: UInt64) {
        since[connection] = now
    }

    /// `connection` got its next request, or is gone: it no longer waits.
    mutating func stopped(_ connection: UInt) {
        since[connection] = nil
    }

    /// Takes out the connections that have waited `timeout` or longer at `now`: O(waiting connections), for a sweep
    /// made once a second.
    mutating func removeExpired(at now: UInt64) -> [UInt] {
        let expired = since.compactMap { now >= $0.value + timeout ? $0.key : nil }
        for connection in expired { since[connection] = nil }
        return expired
    }
}
