import DequeModule
import MemoryBudget
import WebSocketTransport

/// The encoded `update` messages of a table's latest versions, kept so that a subscriber a little behind catches up
/// from memory with the very buffers that were fanned out; older catch-ups read the store's log.
///
/// Bounded by count and bytes, and its bytes are counted in the memory budget's update-history account for as long
/// as it keeps them: when that account is over its share, ``shed(_:)`` gives back the oldest.
final class UpdateHistory {
    /// Most messages kept.
    let limit: Int
    /// Most payload bytes kept.
    let byteLimit: Int
    private let account: MemoryBudget.Account
    /// Kept messages, oldest first; a dropped one is let go at once (a megabyte update must not outlive its turn).
    private var messages = Deque<WebSocketMessage>()
    /// Payload bytes of the kept messages, all counted in `account`.
    private(set) var bytes = 0
    /// The version of `messages[start]`.
    private var firstVersion: UInt64

    /// An empty history whose next message will be `version + 1`.
    init(after version: UInt64, limit: Int, byteLimit: Int, account: MemoryBudget.Account) {
        self.limit = limit
        self.byteLimit = byteLimit
        self.account = account
        firstVersion = version + 1
    }

    deinit { account.release(bytes) }

    /// Appends the message of the next version, then drops the oldest beyond the bounds, and beyond the account's
    /// share when that is full (all tables' histories share it).
    func append(_ message: WebSocketMessage) {
        messages.append(message)
        bytes += message.count
        account.charge(message.count)
        while messages.count > limit || (bytes > byteLimit && messages.count > 1) { dropOldest() }
        if account.isOver {
            account.degraded()
            shed(account.excess)
        }
    }

    /// Drops the oldest messages until `count` bytes were given back or none is left; returns the bytes given back.
    /// Catch-ups from before them read the store's log.
    @discardableResult
    func shed(_ bytesWanted: Int) -> Int {
        let before = bytes
        while before - bytes < bytesWanted && !messages.isEmpty { dropOldest() }
        return before - bytes
    }

    private func dropOldest() {
        let size = messages.removeFirst().count
        bytes -= size
        account.release(size)
        firstVersion += 1
    }

    /// The messages of the versions after `version` up to the latest, or nil when some are no longer kept.
    func messages(after version: UInt64) -> Deque<WebSocketMessage>.SubSequence? {
        guard version + 1 >= firstVersion else { return nil }
        let offset = Int(version + 1 - firstVersion)
        guard offset <= messages.count else { return nil }
        return messages[offset...]
    }
}
