@testable import TableModel
import TablecastTesting
import XCTest

/// What `BatchLayout` answers for rebasing (where an old section, row or gap ends up) checked against the table
/// the batch produces, by following ids: a naive reference that shares nothing with the layout's arithmetic.
final class BatchLayoutTests: XCTestCase {
    func testSectionsRowsAndGapsEndUpWhereTheirIDsDo() {
        withSeed { generator in
            for _ in 0..<400 {
                let table = RandomTables.table(using: &generator)
                let batch = RandomTables.validBatch(for: table, using: &generator)
                let layout = try table.layout(of: batch, checkIDs: true) { "\($0.rawValue)[\($1)]" }
                var after = table
                try after.apply(batch)
                let message = "\(batch.json.jsonText)\non \(table.json.jsonText)"

                var finalSection: [String: Int] = [:]
                var finalRow: [String: RowPath] = [:]
                for (index, section) in after.sections.enumerated() {
                    finalSection[section.id] = index
                    for (row, value) in section.rows.enumerated() { finalRow[value.id] = RowPath(section: index, row: row) }
                }
                // What leaves its old place, and what the batch puts into final places (insertions and moves).
                let removedSections = Set(batch.deleteSections + batch.moveSections.map(\.from))
                let placedSectionIDs = Set(batch.insertSections.map(\.section.id) + batch.moveSections.map { table.sections[$0.from].id })
                let removedRows = Set(batch.deleteRows + batch.moveRows.map(\.from))
                let placedRowIDs = Set(batch.insertRows.map(\.row.id) + batch.moveRows.map { table.row(at: $0.from)!.id })

                for (index, section) in table.sections.enumerated() {
                    XCTAssertEqual(layout.finalSection(ofOld: index), finalSection[section.id], message)
                    for (row, value) in section.rows.enumerated() {
                        let expected: BatchLayout.Fate =
                            finalSection[section.id] == nil ? .sectionDeleted : finalRow[value.id].map { .at($0) } ?? .deleted
                        XCTAssertEqual(layout.fate(of: RowPath(section: index, row: row)), expected, message)
                    }
                    for gap in 0...section.rows.count {
                        guard let final = finalSection[section.id] else {
                            XCTAssertNil(layout.finalRowGap(section: index, gap: gap), message)
                            continue
                        }
                        // Just after where the nearest surviving row before the gap ends up, past what the batch placed there.
                        let predecessor = (0..<gap).last { !removedRows.contains(RowPath(section: index, row: $0)) }
                        var row = predecessor.map { finalRow[section.rows[$0].id]!.row + 1 } ?? 0
                        let rows = after.sections[final].rows
                        while row < rows.count, placedRowIDs.contains(rows[row].id) { row += 1 }
                        XCTAssertEqual(layout.finalRowGap(section: index, gap: gap), RowPath(section: final, row: row), "gap \(gap) of section \(index) in \(message)")
                    }
                }
                for gap in 0...table.sections.count {
                    let predecessor = (0..<gap).last { !removedSections.contains($0) }
                    var final = predecessor.map { finalSection[table.sections[$0].id]! + 1 } ?? 0
                    while final < after.sections.count, placedSectionIDs.contains(after.sections[final].id) { final += 1 }
                    XCTAssertEqual(layout.finalSectionGap(gap), final, "section gap \(gap) in \(message)")
                }
            }
        }
    }
}
