@testable import TableModel

/// Where a batch puts the old sections, rows and gaps of a table, read off the table it produces by following
/// ids: the naive reference for the rebasing answers of `BatchLayout` and `SingleRowChange`, sharing none of
/// their arithmetic.
struct BatchOutcome {
    let table: Table
    let after: Table
    private var finalSections: [String: Int] = [:]
    private var finalRows: [String: RowPath] = [:]
    /// What leaves its old place, and what the batch puts into final places (insertions and moves).
    private let removedSections: Set<Int>
    private let placedSectionIDs: Set<String>
    private let removedRows: Set<RowPath>
    private let placedRowIDs: Set<String>

    /// Applies `batch` (which must be valid) to `table`.
    init(table: Table, batch: Batch) throws {
        self.table = table
        var after = table
        try after.apply(batch)
        self.after = after
        for (index, section) in after.sections.enumerated() {
            finalSections[section.id] = index
            for (row, value) in section.rows.enumerated() { finalRows[value.id] = RowPath(section: index, row: row) }
        }
        removedSections = Set(batch.deleteSections + batch.moveSections.map(\.from))
        placedSectionIDs = Set(
            batch.insertSections.map(\.section.id) + batch.moveSections.map { table.sections[$0.from].id })
        removedRows = Set(batch.deleteRows + batch.moveRows.map(\.from))
        placedRowIDs = Set(batch.insertRows.map(\.row.id) + batch.moveRows.map { table.row(at: $0.from)!.id })
    }

    /// Every old row's index path.
    var oldRows: [RowPath] {
        table.sections.indices.flatMap { section in
            table.sections[section].rows.indices.map { RowPath(section: section, row: $0) }
        }
    }

    /// Every gap between old rows: each section's rows and the gap after its last row.
    var oldRowGaps: [(section: Int, gap: Int)] {
        table.sections.indices.flatMap { section in (0...table.sections[section].rows.count).map { (section, $0) } }
    }

    func finalSection(ofOld section: Int) -> Int? { finalSections[table.sections[section].id] }

    func fate(of path: RowPath) -> BatchLayout.Fate {
        guard finalSection(ofOld: path.section) != nil else { return .sectionDeleted }
        return finalRows[table.row(at: path)!.id].map { .at($0) } ?? .deleted
    }

    /// Just after where the nearest surviving row before the gap ends up, past what the batch placed there.
    func finalRowGap(section: Int, gap: Int) -> RowPath? {
        guard let final = finalSection(ofOld: section) else { return nil }
        let predecessor = (0..<gap).last { !removedRows.contains(RowPath(section: section, row: $0)) }
        var row = predecessor.map { finalRows[table.sections[section].rows[$0].id]!.row + 1 } ?? 0
        let rows = after.sections[final].rows
        while row < rows.count, placedRowIDs.contains(rows[row].id) { row += 1 }
        return RowPath(section: final, row: row)
    }

    /// Just after where the nearest surviving section before the gap ends up, past what the batch placed there.
    func finalSectionGap(_ gap: Int) -> Int {
        let predecessor = (0..<gap).last { !removedSections.contains($0) }
        var final = predecessor.map { finalSections[table.sections[$0].id]! + 1 } ?? 0
        while final < after.sections.count, placedSectionIDs.contains(after.sections[final].id) { final += 1 }
        return final
    }
}
