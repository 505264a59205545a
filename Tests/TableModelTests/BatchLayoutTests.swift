import TablecastTesting
import XCTest

@testable import TableModel

/// What `BatchLayout` answers for rebasing (where an old section, row or gap ends up) checked against the table
/// the batch produces, by following ids.
final class BatchLayoutTests: XCTestCase {
    func testSectionsRowsAndGapsEndUpWhereTheirIDsDo() {
        withSeed { generator in
            for _ in 0..<400 {
                let table = RandomTables.table(using: &generator)
                let batch = RandomTables.validBatch(for: table, using: &generator)
                let layout = try table.layout(of: batch, checkIDs: true) { "\($0.rawValue)[\($1)]" }
                let expected = try BatchOutcome(table: table, batch: batch)
                let message = "\(batch.json.jsonText)\non \(table.json.jsonText)"

                for section in table.sections.indices {
                    XCTAssertEqual(layout.finalSection(ofOld: section), expected.finalSection(ofOld: section), message)
                }
                for path in expected.oldRows {
                    XCTAssertEqual(layout.fate(of: path), expected.fate(of: path), "row \(path) in \(message)")
                }
                for (section, gap) in expected.oldRowGaps {
                    XCTAssertEqual(
                        layout.finalRowGap(section: section, gap: gap),
                        expected.finalRowGap(section: section, gap: gap),
                        "gap \(gap) of section \(section) in \(message)")
                }
                for gap in 0...table.sections.count {
                    XCTAssertEqual(
                        layout.finalSectionGap(gap), expected.finalSectionGap(gap), "section gap \(gap) in \(message)")
                }
            }
        }
    }
}
