extension SQLiteTableStore {
    /// The refs of `client`'s (of `principal`) committed intents that are still kept, with what each was used for,
    /// so a server can tell a retried intent from a new one without a lookup per intent; fetch the ack itself
    /// with ``ack(client:ref:principal:)`` on a hit.
    public func refs(of client: String, principal: String = "") throws -> [String: StoredRef] {
        try perform("listing the refs of client \(client) in \(path)") {
            let rows = try connection.rows(
                "SELECT ref, table_name, intent, epoch FROM refs WHERE principal = ?1 AND client = ?2",
                [.text(principal), .text(client)]
            ) { ($0.text(at: 0), StoredRef(table: $0.text(at: 1), epoch: $0.int64(at: 3), intent: $0.text(at: 2))) }
            return Dictionary(rows, uniquingKeysWith: { first, _ in first })
        }
    }
}
