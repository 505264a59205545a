import TablecastTesting
import XCTest

@testable import TableModel

/// `SingleRowChange`, the inline form of a one-row batch, checked against the table the batch produces by
/// following ids, for random inserts, deletes, moves and edits.
final class SingleRowChangeTests: XCTestCase {
    func testRowsAndGapsEndUpWhereTheirIDsDo() {
        withSeed { generator in
            var checked = 0
            for _ in 0..<1_000 {
                let table = RandomTables.table(using: &generator)
                guard let batch = Self.oneRowBatch(for: table, using: &generator) else { continue }
                let layout = try table.layout(of: batch, checkIDs: true) { "\($0.rawValue)[\($1)]" }
                let message = "\(batch.json.jsonText)\non \(table.json.jsonText)"
                guard let change = layout.singleRowChange else { return XCTFail("no single-row change for \(message)") }
                let expected = try BatchOutcome(table: table, batch: batch)

                for path in expected.oldRows {
                    XCTAssertEqual(change.fate(of: path), expected.fate(of: path), "row \(path) in \(message)")
                }
                for (section, gap) in expected.oldRowGaps {
                    XCTAssertEqual(
                        change.finalRowGap(section: section, gap: gap),
                        expected.finalRowGap(section: section, gap: gap),
                        "gap \(gap) of section \(section) in \(message)")
                }
                checked += 1
            }
            XCTAssertGreaterThan(checked, 500)
        }
    }

    func testBatchesThatChangeSectionsOrSeveralRowsHaveNone() throws {
        let table = Table(contents: [SectionContent(rows: [RowContent(value: "a"), RowContent(value: "b")])])
        func change(_ batch: Batch) throws -> SingleRowChange? {
            try table.layout(of: batch, checkIDs: false) { "\($0.rawValue)[\($1)]" }.singleRowChange
        }
        XCTAssertNil(try change(Batch(deleteRows: [RowPath(section: 0, row: 0), RowPath(section: 0, row: 1)])))
        XCTAssertNil(try change(Batch(insertSections: [.init(at: 0, section: Section(id: "s9"))])))
        XCTAssertNotNil(try change(Batch(reloadRows: [.init(at: RowPath(section: 0, row: 1), value: "c")])))
    }

    /// A random insert, delete, move or edit of one row that is valid for `table`, or `nil` when it has no
    /// sections (or no rows, for what needs one).
    static func oneRowBatch(for table: Table, using generator: inout SeededGenerator) -> Batch? {
        guard !table.sections.isEmpty else { return nil }
        let paths = table.sections.indices.flatMap { section in
            table.sections[section].rows.indices.map { RowPath(section: section, row: $0) }
        }
        let section = Int.random(in: 0..<table.sections.count, using: &generator)
        let rowCount = table.sections[section].rows.count
        switch Int.random(in: 0..<4, using: &generator) {
        case 0:
            let at = RowPath(section: section, row: Int.random(in: 0...rowCount, using: &generator))
            return Batch(insertRows: [.init(at: at, row: Row(id: "r\(table.nextID)", value: "new"))])
        case 1:
            return paths.randomElement(using: &generator).map { Batch(deleteRows: [$0]) }
        case 2:
            guard let from = paths.randomElement(using: &generator) else { return nil }
            // Moving within a section keeps its count; moving into another adds one.
            let limit = rowCount - (from.section == section ? 1 : 0)
            return Batch(moveRows: [
                .init(from: from, to: RowPath(section: section, row: Int.random(in: 0...limit, using: &generator)))
            ])
        default:
            return paths.randomElement(using: &generator).map { Batch(reloadRows: [.init(at: $0, value: "edited")]) }
        }
    }
}
