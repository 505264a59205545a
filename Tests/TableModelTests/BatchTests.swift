import TableModel
import TablecastTesting
import XCTest

/// Property tests of `Table.apply(_:)` with random tables and random batches.
final class BatchTests: XCTestCase {
    func testRandomValidBatchesMatchTheNaiveReferenceAndPreserveIds() {
        withSeed { generator in
            for _ in 0..<400 {
                let table = RandomTables.table(using: &generator)
                let batch = RandomTables.validBatch(for: table, using: &generator)
                var applied = table
                do {
                    try applied.apply(batch)
                } catch {
                    return XCTFail("valid batch refused: \(error)\n\(batch.json.jsonText)\non \(table.json.jsonText)")
                }
                XCTAssertEqual(applied.sections, RandomTables.reference(table, batch), batch.json.jsonText)
                XCTAssertEqual(applied.version, table.version + (batch.isEmpty ? 0 : 1))

                let deletedSections = Set(batch.deleteSections)
                var expectedIDs = Set<String>()
                for (index, section) in table.sections.enumerated() where !deletedSections.contains(index) {
                    expectedIDs.insert(section.id)
                    for (row, value) in section.rows.enumerated()
                    where !batch.deleteRows.contains(RowPath(section: index, row: row)) {
                        expectedIDs.insert(value.id)
                    }
                }
                for insert in batch.insertSections {
                    expectedIDs.insert(insert.section.id)
                    expectedIDs.formUnion(insert.section.rows.map(\.id))
                }
                expectedIDs.formUnion(batch.insertRows.map(\.row.id))
                let ids = applied.sections.flatMap { [$0.id] + $0.rows.map(\.id) }
                XCTAssertEqual(ids.count, Set(ids).count, "duplicated ids")
                XCTAssertEqual(Set(ids), expectedIDs)
                XCTAssertEqual(try Batch(json: batch.json), batch)
            }
        }
    }

    func testRandomInvalidBatchesAreRejectedAndLeaveTheTableUnchanged() {
        withSeed { generator in
            var rejected = 0
            for _ in 0..<400 {
                let table = RandomTables.table(using: &generator)
                guard
                    let batch = corrupt(
                        RandomTables.validBatch(for: table, using: &generator), table, using: &generator)
                else {
                    continue
                }
                var applied = table
                XCTAssertThrowsError(try applied.apply(batch), batch.json.jsonText) { error in
                    let code = (error as? TableError)?.code
                    XCTAssert([.outOfRange, .invalidBatch].contains(code), "\(error)")
                }
                XCTAssertEqual(applied, table)
                rejected += 1
            }
            XCTAssertGreaterThan(rejected, 100)
        }
    }

    /// A batch of one reload (the edit, which replicas apply without a layout) changes the table as the reference
    /// does; one whose row does not exist gets the error ``Table/validate(_:)`` gives it and changes nothing.
    func testOneReloadAppliesLikeAnyBatch() {
        withSeed { generator in
            var applied = 0
            for _ in 0..<400 {
                let table = RandomTables.table(using: &generator)
                let section = Int.random(in: -1...table.sections.count, using: &generator)
                let rows = table.sections.indices.contains(section) ? table.sections[section].rows.count : 1
                let at = RowPath(section: section, row: Int.random(in: -1...rows, using: &generator))
                let batch = Batch(
                    reloadRows: [
                        .init(
                            at: at, value: .number(Double(applied)), editable: Bool.random(using: &generator),
                            movable: [nil, false].randomElement(using: &generator)!,
                            editingStyle: [nil, EditingStyle.none].randomElement(using: &generator)!)
                    ])
                var result = table
                do {
                    try result.apply(batch)
                    XCTAssertEqual(result.sections, RandomTables.reference(table, batch))
                    XCTAssertEqual(result.version, table.version + 1)
                    XCTAssertEqual(result.nextID, table.nextID)
                    applied += 1
                } catch {
                    XCTAssertThrowsError(try table.validate(batch)) { expected in
                        XCTAssertEqual(error as? TableError, expected as? TableError)
                    }
                    XCTAssertEqual(result, table)
                }
            }
            XCTAssertGreaterThan(applied, 40, "both kinds are tried: rows that exist and rows that do not")
            XCTAssertLessThan(applied, 360)
        }
    }

    /// One random defect that makes a valid batch invalid, or `nil` when the batch offers nothing to break.
    private func corrupt(_ valid: Batch, _ table: Table, using generator: inout SeededGenerator) -> Batch? {
        var batch = valid
        let finalSections = table.sections.count - batch.deleteSections.count + batch.insertSections.count
        switch Int.random(in: 0..<8, using: &generator) {
        case 0:
            guard let delete = batch.deleteRows.randomElement(using: &generator) else { return nil }
            batch.deleteRows.append(delete) // duplicate
        case 1:
            batch.deleteSections.append(table.sections.count) // out of range before the update
        case 2:
            guard let reload = batch.reloadRows.randomElement(using: &generator) else { return nil }
            batch.deleteRows.append(reload.at) // deleted and reloaded
        case 3:
            guard finalSections > 0 else { return nil }
            // A gap.
            batch.insertSections.append(.init(at: finalSections + 1, section: Section(id: "s\(table.nextID + 1000)")))
        case 4:
            guard let insert = batch.insertRows.first else { return nil }
            // A collision.
            batch.insertRows.append(
                .init(at: insert.at, row: Row(id: "r\(table.nextID + UInt64(valid.insertRows.count) + 50)", value: 0)))
        case 5:
            guard let deleted = batch.deleteSections.first, !table.sections[deleted].rows.isEmpty else { return nil }
            batch.deleteRows.append(RowPath(section: deleted, row: 0)) // row in a deleted section
        case 6:
            guard !batch.insertRows.isEmpty else { return nil }
            batch.insertRows[0].row.id = "r1" // not a fresh id
        default:
            guard let section = table.sections.indices.randomElement(using: &generator) else { return nil }
            batch.reloadRows.append(
                .init(at: RowPath(section: section, row: table.sections[section].rows.count), value: 0))
        }
        return batch
    }
}
