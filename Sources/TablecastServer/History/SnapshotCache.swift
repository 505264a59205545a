import TableModel

/// The tables parsed from the snapshots the latest history reads started from, so that reading several versions
/// near one another (someone browsing a table's history) parses each snapshot once: a stored snapshot of a given
/// table, epoch and version never changes.
struct SnapshotCache {
    struct Key: Hashable {
        var table: String
        var epoch: Int64
        var version: Int64
    }

    /// Most snapshots kept; the least recently used goes first.
    let capacity: Int
    private var entries: [(key: Key, table: Table)] = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The table parsed from snapshot `key`, which becomes the most recently used; nil when not cached.
    mutating func table(_ key: Key) -> Table? {
        guard let index = entries.firstIndex(where: { $0.key == key }) else { return nil }
        let entry = entries.remove(at: index)
        entries.append(entry)
        return entry.table
    }

    /// Keeps `table` as snapshot `key`, dropping the least recently used beyond `capacity`.
    mutating func insert(_ table: Table, for key: Key) {
        entries.removeAll { $0.key == key }
        entries.append((key, table))
        if entries.count > capacity { entries.removeFirst(entries.count - capacity) }
    }
}
