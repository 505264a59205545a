import WebSocketTransport

/// The encoded `update` messages of a table's latest versions, kept so that a subscriber a little behind catches up
/// from memory with the very buffers that were fanned out; older catch-ups read the store's log.
struct UpdateHistory {
    /// Most messages kept.
    let limit: Int
    /// Most payload bytes kept.
    let byteLimit: Int
    private var messages: [WebSocketMessage] = []
    private var start = 0
    private var bytes = 0
    /// The version of `messages[start]`.
    private var firstVersion: UInt64

    /// An empty history whose next message will be `version + 1`.
    init(after version: UInt64, limit: Int, byteLimit: Int) {
        self.limit = limit
        self.byteLimit = byteLimit
        firstVersion = version + 1
    }

    private var count: Int { messages.count - start }

    /// Appends the message of the next version.
    mutating func append(_ message: WebSocketMessage) {
        messages.append(message)
        bytes += message.count
        while count > limit || (bytes > byteLimit && count > 1) {
            bytes -= messages[start].count
            start += 1
            firstVersion += 1
        }
        // Drop the consumed prefix in bulk so appending stays O(1) amortized.
        if start > 1024 && start * 2 > messages.count {
            messages.removeFirst(start)
            start = 0
        }
    }

    /// The messages of the versions after `version` up to the latest, or nil when some are no longer kept.
    func messages(after version: UInt64) -> ArraySlice<WebSocketMessage>? {
        guard version + 1 >= firstVersion else { return nil }
        let offset = Int(version + 1 - firstVersion)
        guard offset <= count else { return nil }
        return messages[(start + offset)...]
    }
}
