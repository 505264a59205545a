import DequeModule

/// Deadlines that each fall a fixed `span` after they are set, so that setting them in order keeps them in order:
/// a queue with O(1) per deadline, where lws' sorted timer list walks past every other one (see `Liveness`). The
/// service loop keeps one per kind (lingering connections' ends, event streams' heartbeats, API answers). Time is
/// given (uptime, ns), never read, so tests step it.
struct DeadlineQueue<ID> {
    /// How long after it is set each deadline falls (ns).
    let span: UInt64
    private var entries = Deque<(due: UInt64, id: ID)>()

    init(span: Duration) {
        self.span = span.nanoseconds
    }

    var isEmpty: Bool { entries.isEmpty }

    /// Sets `id`'s deadline to `span` after `now`.
    mutating func add(_ id: ID, at now: UInt64) {
        entries.append((now + span, id))
    }

    /// Takes out the next id whose deadline is at or before `now`; nil when none is.
    mutating func popDue(at now: UInt64) -> ID? {
        guard let first = entries.first, first.due <= now else { return nil }
        return entries.removeFirst().id
    }
}
