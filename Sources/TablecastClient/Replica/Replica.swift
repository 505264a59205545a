import TableModel
import TablecastProtocol

/// A client's copy of one table, kept in step with the server's `update`s (a `snapshot` replaces it).
public struct Replica: Hashable, Sendable {
    /// The table's name.
    public var name: String
    /// The table's epoch (one life of the table); resuming needs it.
    public var epoch: String
    /// The table: sections, version and rules. Its `nextID` is not known to clients and means nothing here.
    public var table: Table

    /// Creates a replica from a snapshot.
    public init(name: String, epoch: String, table: Table) {
        self.name = name
        self.epoch = epoch
        self.table = table
    }

    /// The replica's version.
    public var version: UInt64 { table.version }

    /// Applies one update with UIKit batch semantics (all or nothing). Throws when the update does not follow the
    /// replica (a version gap) or does not fit it; the replica is then unchanged and must be resynchronised.
    public mutating func apply(_ update: ServerMessage.Update) throws(TableError) {
        guard update.version == table.version + 1 else {
            throw TableError(
                .stale, at: nil, "update version \(update.version) does not follow replica version \(table.version)")
        }
        // The replica does not know the server's id generator: start it at the first id the update creates, so
        // that `apply` checks the new ids are consecutive, as the server assigns them.
        if let first = Self.firstCreatedNumber(update.batch) { table.nextID = first }
        try table.apply(update.batch)
        table.version = update.version
    }

    /// Whether two replicas hold the same table: sections, version and rules (not the id generator).
    public func hasSameContents(as other: Replica) -> Bool {
        table.version == other.table.version && table.sections == other.table.sections
            && table.rules == other.table.rules
    }

    private static func firstCreatedNumber(_ batch: Batch) -> UInt64? {
        var first: UInt64?
        func consider(_ id: String) {
            guard let number = UInt64(id.dropFirst()) else { return }
            first = min(first ?? number, number)
        }
        for insert in batch.insertSections {
            consider(insert.section.id)
            for row in insert.section.rows { consider(row.id) }
        }
        for insert in batch.insertRows { consider(insert.row.id) }
        return first
    }
}
