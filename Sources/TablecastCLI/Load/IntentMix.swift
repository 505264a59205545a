import TableModel
import TablecastClient

/// The kinds of intent the load tester sends, with their shares (percentages, or any weights).
struct IntentMix: Sendable, CustomStringConvertible {
    enum Kind: String, CaseIterable, Sendable {
        case insert, delete, move, edit, batch
    }

    var weights: [(kind: Kind, weight: Int)]

    /// Parses `insert=40,delete=20,move=15,edit=20,batch=5`.
    init(parsing text: String) throws {
        var weights: [(Kind, Int)] = []
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let kind = Kind(rawValue: String(pair[0])), let weight = Int(pair[1]), weight >= 0
            else {
                throw LoadError(
                    "--mix: '\(part)' is not kind=weight with kind one of insert, delete, move, edit, batch")
            }
            weights.append((kind, weight))
        }
        guard weights.contains(where: { $0.1 > 0 }) else { throw LoadError("--mix: no kind has a positive weight") }
        self.weights = weights
    }

    var description: String { weights.map { "\($0.kind.rawValue)=\($0.weight)" }.joined(separator: ",") }

    private func pick(using random: inout some RandomNumberGenerator) -> Kind {
        let total = weights.reduce(0) { $0 + $1.weight }
        var roll = Int.random(in: 0..<total, using: &random)
        for (kind, weight) in weights {
            if roll < weight { return kind }
            roll -= weight
        }
        return weights[0].kind
    }

    /// A random intent that is valid against `table` (ids given, so a stale one may meet `conflict`).
    func intent(for table: Table, value: JSONValue, ids: Bool = true, using random: inout some RandomNumberGenerator)
        -> Intent
    {
        let sections = table.sections
        if sections.isEmpty { return .insertSection(at: 0, section: SectionContent(rows: [RowContent(value: value)])) }
        let rowCount = sections.reduce(0) { $0 + $1.rows.count }
        func anyRow() -> (RowPath, String?) {
            var index = Int.random(in: 0..<rowCount, using: &random)
            for (s, section) in sections.enumerated() {
                if index < section.rows.count {
                    return (RowPath(section: s, row: index), ids ? section.rows[index].id : nil)
                }
                index -= section.rows.count
            }
            fatalError("unreachable")
        }
        func gap() -> RowPath {
            let s = Int.random(in: 0..<sections.count, using: &random)
            return RowPath(section: s, row: Int.random(in: 0...sections[s].rows.count, using: &random))
        }
        let kind = rowCount == 0 ? .insert : pick(using: &random)
        switch kind {
        case .insert:
            return .insert(at: gap(), row: RowContent(value: value))
        case .delete:
            let (path, id) = anyRow()
            return .delete(RowRef(path, id: id))
        case .move:
            let (path, id) = anyRow()
            var to = gap()
            // Within its own section a row's destination ranges over the rows it is among after leaving.
            if to.section == path.section { to.row = min(to.row, sections[to.section].rows.count - 1) }
            return .move(from: RowRef(path, id: id), to: to)
        case .edit:
            let (path, id) = anyRow()
            return .edit(RowRef(path, id: id), value: value)
        case .batch:
            // beginUpdates…endUpdates: delete one row and reload another (old indexes), insert one at the top of the
            // deleted row's section (new index), so the table keeps its size.
            let (path, id) = anyRow()
            var batch = ClientBatch(
                deleteRows: [RowRef(path, id: id)],
                insertRows: [.init(at: RowPath(section: path.section, row: 0), row: RowContent(value: value))])
            let (other, otherID) = anyRow()
            if other != path { batch.reloadRows = [.init(row: RowRef(other, id: otherID), value: value)] }
            return .batch(batch)
        }
    }
}

/// A refusal of the load tester's options or setup.
struct LoadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
