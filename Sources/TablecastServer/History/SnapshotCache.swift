/// What the latest history reads made of a table at a version, kept so that reading several versions near one
/// another parses or encodes each once: the tables parsed from stored snapshots (someone browsing a table's
/// history), and the encoded historical snapshots many clients ask for. A stored snapshot of a given table, epoch
/// and version never changes; an encoded one also depends on the table's current rules, which it carries.
struct SnapshotCache<Value> {
    struct Key: Hashable {
        var table: String
        var epoch: Int64
        var version: Int64
        /// The table's rules as stored, for values that carry them; empty for those that do not.
        var rules = ""
    }

    /// Most values kept; the least recently used goes first.
    let capacity: Int
    private var entries: [(key: Key, value: Value)] = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The value kept for `key`, which becomes the most recently used; nil when none is.
    mutating func value(_ key: Key) -> Value? {
        guard let index = entries.firstIndex(where: { $0.key == key }) else { return nil }
        let entry = entries.remove(at: index)
        entries.append(entry)
        return entry.value
    }

    /// Keeps `value` for `key`, dropping the least recently used beyond `capacity`.
    mutating func insert(_ value: Value, for key: Key) {
        entries.removeAll { $0.key == key }
        entries.append((key, value))
        if entries.count > capacity { entries.removeFirst(entries.count - capacity) }
    }
}
