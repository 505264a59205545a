import Synchronization

/// A table's committed version and subscriber count as `listTables` shows them, readable without waiting for
/// the table's actor, which sets them.
final class TableListing: Sendable {
    private let state: Mutex<(version: UInt64, subscribers: Int)>

    init(version: UInt64) {
        state = Mutex((version, 0))
    }

    var current: (version: UInt64, subscribers: Int) { state.withLock { $0 } }

    func set(version: UInt64, subscribers: Int) {
        state.withLock { $0 = (version, subscribers) }
    }

    /// A new committed version; the subscribers are as they were.
    func set(version: UInt64) {
        state.withLock { $0.version = version }
    }
}
