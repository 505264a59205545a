import DequeModule

/// The messages one connection has delivered to the application that the application has not reported consumed,
/// for inbound flow control: at either bound, or when the memory budget's inbound account is past its share, the
/// connection stops being read. It is read again once the backlog is down to half of both bounds, and, when the
/// budget paused it, once it is empty. Messages are consumed in the order they were delivered.
struct InboundBacklog: Sendable {
    /// Most messages, or nil for no bound on their number.
    let maxMessages: Int?
    /// Most payload bytes, or nil for no bound on their size.
    let maxBytes: Int?
    private var sizes = Deque<Int>()
    /// Payload bytes delivered and not consumed.
    private(set) var bytes = 0
    /// Reading is paused until the backlog drains (see `consume`).
    private var paused = false
    /// The budget paused it: it drains only when empty, so that the connections holding the account's bytes give
    /// them back before they take more.
    private var pausedForBudget = false

    init(maxMessages: Int?, maxBytes: Int?) {
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
    }

    /// Whether either bound is reached.
    var isFull: Bool {
        maxMessages.map { sizes.count >= $0 } ?? false || maxBytes.map { bytes >= $0 } ?? false
    }

    /// Whether the backlog is above half of either bound: a paused connection stays paused.
    private var isAboveHalf: Bool {
        maxMessages.map { sizes.count > $0 / 2 } ?? false || maxBytes.map { bytes > $0 / 2 } ?? false
    }

    /// Records a message of `size` bytes handed to the application, `overBudget` when the budget's inbound account
    /// is past its share with it; true when reading must now pause.
    mutating func deliver(size: Int, overBudget: Bool = false) -> Bool {
        sizes.append(size)
        bytes += size
        guard isFull || overBudget else { return false }
        paused = true
        pausedForBudget = pausedForBudget || overBudget
        return true
    }

    /// Records the oldest message consumed: its size, and whether that drained the backlog far enough for a paused
    /// connection to be read again. Nil when nothing was delivered.
    mutating func consume() -> (size: Int, resumes: Bool)? {
        guard let size = sizes.popFirst() else { return nil }
        bytes -= size
        guard paused, !isAboveHalf, !pausedForBudget || sizes.isEmpty else { return (size, false) }
        paused = false
        pausedForBudget = false
        return (size, true)
    }
}
