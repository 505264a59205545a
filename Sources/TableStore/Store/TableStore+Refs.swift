extension TableStore {
    /// The refs of `client`'s committed intents that are still kept, so a server can tell a retried intent from a
    /// new one without a lookup per intent; fetch the ack itself with ``ack(client:ref:)`` on a hit.
    public func refs(of client: String) throws -> Set<String> {
        try perform("listing the refs of client \(client) in \(path)") {
            Set(try connection.rows("SELECT ref FROM refs WHERE client = ?1", [.text(client)]) { $0.text(at: 0) })
        }
    }
}
