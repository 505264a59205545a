import DequeModule

/// The messages one connection has delivered to the application that the application has not reported consumed,
/// for inbound flow control: at either bound the connection stops being read, and it is read again once the
/// backlog is down to half of both. Messages are consumed in the order they were delivered.
struct InboundBacklog: Sendable {
    /// Most messages, or nil for no bound on their number.
    let maxMessages: Int?
    /// Most payload bytes, or nil for no bound on their size.
    let maxBytes: Int?
    private var sizes = Deque<Int>()
    private var bytes = 0

    init(maxMessages: Int?, maxBytes: Int?) {
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
    }

    /// Whether either bound is reached: reading must pause.
    var isFull: Bool {
        maxMessages.map { sizes.count >= $0 } ?? false || maxBytes.map { bytes >= $0 } ?? false
    }

    /// Whether the backlog is above half of either bound: a paused connection stays paused.
    private var isAboveHalf: Bool {
        maxMessages.map { sizes.count > $0 / 2 } ?? false || maxBytes.map { bytes > $0 / 2 } ?? false
    }

    /// Records a message of `size` bytes handed to the application; true when reading must now pause.
    mutating func deliver(size: Int) -> Bool {
        sizes.append(size)
        bytes += size
        return isFull
    }

    /// Records the oldest message consumed; true when that brought the backlog down to half of its bounds, where
    /// a paused connection is read again.
    mutating func consume() -> Bool {
        let wasAboveHalf = isAboveHalf
        guard let size = sizes.popFirst() else { return false }
        bytes -= size
        return wasAboveHalf && !isAboveHalf
    }
}
