import TableModel
import XCTest

/// A table of `sections` sections whose rows hold the strings given, seeded through a fresh table so ids are
/// predictable (`s1`, `r2`, ...).
func makeTable(_ sections: [[String]], rules: TableRules = TableRules()) -> Table {
    Table(contents: sections.map { SectionContent(rows: $0.map { RowContent(value: .string($0)) }) }, rules: rules)
}

func values(_ table: Table) -> [[String]] {
    table.sections.map { $0.rows.map { if case .string(let text) = $0.value { text } else { $0.value.jsonText } } }
}

func path(_ section: Int, _ row: Int) -> RowPath { RowPath(section: section, row: row) }

func assertError(
    _ expression: @autoclosure () throws -> some Any, _ code: TableError.Code, _ message: String,
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(try expression(), file: file, line: line) { error in
        guard let error = error as? TableError else {
            return XCTFail("not a TableError: \(error)", file: file, line: line)
        }
        XCTAssertEqual(error.code, code, file: file, line: line)
        XCTAssertEqual(error.message, message, file: file, line: line)
    }
}

final class TableEngineTests: XCTestCase {
    @discardableResult
    func commit(_ engine: inout TableEngine, _ intent: Intent, base: UInt64? = nil) throws -> Resolution {
        let resolution = try engine.resolve(intent, base: base)
        try engine.commit(resolution)
        return resolution
    }

    func testResolveIsPureAndCommitAppliesTheCanonicalBatch() throws {
        var engine = TableEngine(table: makeTable([["a", "b"]]))
        let before = engine.table
        let resolution = try engine.resolve(.insert(at: path(0, 1), row: RowContent(value: "x")))
        XCTAssertEqual(engine.table, before)
        XCTAssertEqual(resolution.version, 1)
        XCTAssertEqual(resolution.createdIDs, ["r4"])
        XCTAssertEqual(resolution.insertedRows, [path(0, 1)])
        XCTAssertEqual(resolution.batch, Batch(insertRows: [.init(at: path(0, 1), row: Row(id: "r4", value: "x"))]))
        try engine.commit(resolution)
        XCTAssertEqual(values(engine.table), [["a", "x", "b"]])
        XCTAssertEqual(engine.table.version, 1)
        assertError(
            try engine.commit(resolution), .stale, "the resolution was made at version 0 but the table is at version 1")
    }

    func testBatchIntentAssignsIdsInEntryOrderAndReportsPositions() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c"]]))
        let resolution = try commit(
            &engine,
            .batch(
                ClientBatch(
                    insertSections: [
                        .init(at: 0, section: SectionContent(header: "new", rows: [RowContent(value: "n")]))
                    ],
                    deleteRows: [RowRef(path(0, 0), id: "r2")],
                    insertRows: [
                        .init(at: path(1, 2), row: RowContent(value: "y")),
                        .init(at: path(1, 0), row: RowContent(value: "x")),
                    ],
                    moveRows: [.init(from: RowRef(path(0, 2)), to: path(1, 3))])))
        XCTAssertEqual(values(engine.table), [["n"], ["x", "b", "y", "c"]])
        XCTAssertEqual(resolution.createdIDs, ["s5", "r6", "r7", "r8"])
        XCTAssertEqual(resolution.insertedRows, [path(1, 2), path(1, 0)])
        XCTAssertEqual(resolution.movedRows, [path(1, 3)])
        XCTAssertEqual(engine.table.sections[1].rows.map(\.id), ["r8", "r3", "r7", "r4"])
        XCTAssertEqual(resolution.batch.insertRows.map(\.at), [path(1, 0), path(1, 2)], "canonical order")
    }

    func testDeletingARowThatIsAlreadyDeletedIsANoop() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c"]]))
        try commit(&engine, .delete(RowRef(path(0, 1), id: "r3")), base: 0)
        let second = try engine.resolve(.delete(RowRef(path(0, 1), id: "r3")), base: 0)
        XCTAssertTrue(second.isNoop)
        XCTAssertEqual(second.version, 1)
        try engine.commit(second)
        XCTAssertEqual(engine.table.version, 1)
        XCTAssertEqual(values(engine.table), [["a", "c"]])
    }

    func testEditingAChangedNothingValueCommitsNothing() throws {
        let engine = TableEngine(table: makeTable([["a"]]))
        XCTAssertTrue(try engine.resolve(.edit(RowRef(path(0, 0)), value: "a")).isNoop)
        XCTAssertTrue(try engine.resolve(.move(from: RowRef(path(0, 0)), to: path(0, 0))).isNoop)
        XCTAssertTrue(try engine.resolve(.editSection(SectionRef(0))).isNoop)
    }

    func testEditSectionKeepsAbsentFieldsAndClearsExplicitNil() throws {
        var engine = TableEngine(table: Table(contents: [SectionContent(header: "H", footer: "F")]))
        try commit(&engine, .editSection(SectionRef(0), header: .some("H2")))
        XCTAssertEqual(engine.table.sections[0].header, "H2")
        XCTAssertEqual(engine.table.sections[0].footer, "F")
        let clear = try commit(&engine, .editSection(SectionRef(0), footer: .some(nil)))
        XCTAssertEqual(clear.batch.reloadSections, [.init(at: 0, header: "H2", footer: nil)])
        XCTAssertNil(engine.table.sections[0].footer)
    }

    // MARK: Stale bases

    func testStaleInsertStaysAfterItsPredecessorAndKeepsCommitOrder() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c", "d"]]))
        // Another client inserts right after "b" and deletes "a" and "b"; then ours (base 0) inserts after "b" too.
        try commit(&engine, .insert(at: path(0, 2), row: RowContent(value: "first")), base: 0)
        try commit(&engine, .batch(ClientBatch(deleteRows: [RowRef(path(0, 0)), RowRef(path(0, 1))])), base: 1)
        XCTAssertEqual(values(engine.table), [["first", "c", "d"]])
        let resolution = try commit(&engine, .insert(at: path(0, 2), row: RowContent(value: "second")), base: 0)
        XCTAssertEqual(values(engine.table), [["first", "second", "c", "d"]])
        XCTAssertEqual(resolution.insertedRows, [path(0, 1)])
    }

    func testStaleMoveFollowsItsRowByIdAndItsGap() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c", "d"], ["x"]]))
        try commit(&engine, .insertSection(at: 0, section: SectionContent(header: "top")), base: 0)
        try commit(&engine, .insert(at: path(1, 0), row: RowContent(value: "z")), base: 1)
        // At base 0 the client moved "a" to just after "c".
        let resolution = try commit(&engine, .move(from: RowRef(path(0, 0), id: "r2"), to: path(0, 2)), base: 0)
        XCTAssertEqual(values(engine.table), [[], ["z", "b", "c", "a", "d"], ["x"]])
        XCTAssertEqual(resolution.movedRows, [path(1, 3)])
        XCTAssertEqual(resolution.batch.moveRows, [.init(from: path(1, 1), to: path(1, 3))])
    }

    func testConflictsOfStaleIntents() throws {
        var engine = TableEngine(table: makeTable([["a", "b"], ["c"]]))
        try commit(&engine, .delete(RowRef(path(0, 0))), base: 0)
        try commit(&engine, .deleteSection(SectionRef(1)), base: 1)
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 0)), value: 1), base: 0), .conflict,
            "edit: row [0,0] of version 0 has been deleted since")
        assertError(
            try engine.resolve(.move(from: RowRef(path(1, 0)), to: path(0, 0)), base: 0), .conflict,
            "move: row [1,0] of version 0 is in a section that has been deleted since")
        assertError(
            try engine.resolve(.insert(at: path(1, 0), row: RowContent(value: 1)), base: 1), .conflict,
            "insert: position [1,0] of version 1 is in a section that has been deleted since")
        assertError(
            try engine.resolve(.deleteSection(SectionRef(1)), base: 0), .conflict,
            "deleteSection: section 1 of version 0 has been deleted since")
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 0), id: "r9")), base: 0), .conflict,
            "delete: row [0,0] of version 0 was r2, not r9")
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 1), id: "r2"), value: 1), base: 0), .conflict,
            "edit: row [0,1] of version 0 is now row [0,0], which is r3, not r2")
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 0), id: "r2"), value: 1)), .conflict,
            "edit: row [0,0] is r3, not r2")
        assertError(
            try engine.resolve(.deleteSection(SectionRef(0, id: "s5"))), .conflict,
            "deleteSection: section 0 is s1, not s5")
    }

    func testBasesOutsideTheHistoryAreStale() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c"]]), historyLimit: 2)
        for _ in 0..<3 { try commit(&engine, .edit(RowRef(path(0, 0)), value: .number(Double(engine.table.version)))) }
        XCTAssertEqual(engine.oldestBase, 1)
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 1))), base: 0), .stale,
            "delete: version 0 is older than the kept history, which starts at version 1")
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 1))), base: 4), .stale,
            "delete: version 4 is newer than the table's version 3")
        XCTAssertNoThrow(try engine.resolve(.delete(RowRef(path(0, 1))), base: 1))
    }

    func testAHistoryOverManyChunksKeepsTheLastBatchesAndACopyKeepsItsOwn() throws {
        // 300 kept of 1,000 committed: the kept history spans chunks and its oldest chunks were dropped.
        var engine = TableEngine(table: makeTable([["a", "b"]]), historyLimit: 300)
        for n in 0..<1_000 { try commit(&engine, .edit(RowRef(path(0, 0)), value: .number(Double(n)))) }
        XCTAssertEqual(engine.oldestBase, 700)
        XCTAssertEqual(
            try engine.resolve(.delete(RowRef(path(0, 1), id: "r3")), base: 700).batch.deleteRows, [path(0, 1)])
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 1))), base: 699), .stale,
            "delete: version 699 is older than the kept history, which starts at version 700")
        // A copy (as the server keeps before a group) and the original go on separately: a stale edit of row [0,1]
        // is rebased through each one's own last batch.
        var copy = engine
        try commit(&engine, .insert(at: path(0, 0), row: RowContent(value: "mine")))
        try commit(&copy, .delete(RowRef(path(0, 1))))
        XCTAssertEqual(
            try engine.resolve(.edit(RowRef(path(0, 1)), value: "x"), base: 1_000).batch.reloadRows.map(\.at),
            [path(0, 2)])
        assertError(
            try copy.resolve(.edit(RowRef(path(0, 1)), value: "x"), base: 1_000), .conflict,
            "edit: row [0,1] of version 1000 has been deleted since")
        XCTAssertEqual(engine.oldestBase, 701)
        XCTAssertEqual(copy.oldestBase, 701)
        // A stale intent is rebased through the kept history: the row is still at [0,0] after 300 edits.
        XCTAssertEqual(try copy.resolve(.insert(at: path(0, 1), row: RowContent(value: "x")), base: 701).version, 1_002)
        let unkept = TableEngine(table: makeTable([["a"]]), historyLimit: 0)
        XCTAssertEqual(unkept.oldestBase, 0)
        var none = unkept
        for n in 0..<600 { try commit(&none, .edit(RowRef(path(0, 0)), value: .number(Double(n)))) }
        XCTAssertEqual(none.oldestBase, 600)
        XCTAssertEqual(none.historyBytes, 0)
    }

    func testTheHistoryKeepsLayoutsNotValuesAndIsBoundedByBytes() throws {
        // Reloading a 65 KB value 100 times: the history holds the reloads' layouts, a few hundred bytes each.
        func big(_ n: Int) -> JSONValue { .string(String(repeating: "x", count: 65_000) + "\(n)") }
        var engine = TableEngine(table: makeTable([["a", "b"]]))
        for n in 0..<100 { try commit(&engine, .edit(RowRef(path(0, 0)), value: big(n))) }
        XCTAssertEqual(engine.oldestBase, 0)
        XCTAssertLessThan(engine.historyBytes, 100 * 1_024)
        XCTAssertGreaterThan(engine.historyBytes, 100 * 64)
        // A byte limit keeps the newest entries that fit; each is about the same size here.
        let perEntry = engine.historyBytes / 100
        var bounded = TableEngine(table: makeTable([["a", "b"]]), historyByteLimit: perEntry * 10)
        for n in 0..<100 { try commit(&bounded, .edit(RowRef(path(0, 0)), value: big(n))) }
        XCTAssertLessThanOrEqual(bounded.historyBytes, perEntry * 10)
        XCTAssertEqual(bounded.oldestBase, 100 - UInt64(bounded.historyBytes / perEntry))
        XCTAssertGreaterThanOrEqual(bounded.oldestBase, 90)
        // Trimming (memory is short) drops the oldest first and leaves the newest usable.
        engine.trimHistory(toBytes: perEntry * 3)
        XCTAssertEqual(engine.oldestBase, 97)
        XCTAssertNoThrow(try engine.resolve(.delete(RowRef(path(0, 1))), base: 97))
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 1))), base: 96), .stale,
            "delete: version 96 is older than the kept history, which starts at version 97")
        engine.trimHistory(toBytes: 0)
        XCTAssertEqual(engine.historyBytes, 0)
        XCTAssertEqual(engine.oldestBase, 100)
    }

    func testSnapshotPlusReplayedBatchesRebuildsTheEngine() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c"]]))
        try commit(&engine, .delete(RowRef(path(0, 0))))
        let snapshot = engine.table
        let batches = [
            try commit(&engine, .insert(at: path(0, 2), row: RowContent(value: "d"))).batch,
            try commit(&engine, .moveSection(from: SectionRef(0), to: 0)).batch,
            try commit(&engine, .insertSection(at: 1, section: SectionContent(rows: [RowContent(value: "e")]))).batch,
        ]
        let replayed = try TableEngine(snapshot: snapshot, replaying: batches)
        XCTAssertEqual(replayed.table, engine.table)
        XCTAssertEqual(replayed.oldestBase, snapshot.version)
        XCTAssertEqual(
            try replayed.resolve(.insert(at: path(0, 0), row: RowContent(value: 0)), base: 1),
            try engine.resolve(.insert(at: path(0, 0), row: RowContent(value: 0)), base: 1))
    }

    // MARK: Rules

    func testListing8_1TheFirstRowCannotMove() throws {
        var table = makeTable([["first", "second", "third"]])
        table.sections[0].rows[0].movable = false
        let engine = TableEngine(table: table)
        assertError(
            try engine.resolve(.move(from: RowRef(path(0, 0)), to: path(0, 2))), .notMovable,
            "move: row [0,0] is not movable")
        XCTAssertNoThrow(try engine.resolve(.move(from: RowRef(path(0, 1)), to: path(0, 2))))
    }

    func testListing8_3RetargetsIntoTheSourceSectionBeforeItsPlaceholder() throws {
        let rules = TableRules(moves: .withinSection, reserveLastRow: true)
        let engine = TableEngine(
            table: makeTable([["a0", "a1", "add"], ["b0", "b1", "b2", "add"], ["c0", "add"]], rules: rules))
        // Toward an earlier section: row 0 of the source section.
        let earlier = try engine.resolve(.move(from: RowRef(path(1, 2)), to: path(0, 1)))
        XCTAssertEqual(earlier.movedRows, [path(1, 0)])
        // Toward a later section: the last row of the source section, which is just before the placeholder.
        let later = try engine.resolve(.move(from: RowRef(path(1, 0)), to: path(2, 0)))
        XCTAssertEqual(later.movedRows, [path(1, 2)])
        var table = engine.table
        try table.apply(later.batch)
        XCTAssertEqual(values(table)[1], ["b1", "b2", "b0", "add"])
        // At or after the placeholder within the section: just before it.
        XCTAssertEqual(try engine.resolve(.move(from: RowRef(path(1, 0)), to: path(1, 3))).movedRows, [path(1, 2)])
        XCTAssertEqual(
            try engine.resolve(.insert(at: path(0, 3), row: RowContent(value: "n"))).insertedRows, [path(0, 2)])
        XCTAssertEqual(
            try engine.resolve(.insert(at: path(0, 2), row: RowContent(value: "n"))).insertedRows, [path(0, 2)])
        // Retargeting onto the same place is a move that changes nothing.
        XCTAssertTrue(try engine.resolve(.move(from: RowRef(path(2, 0)), to: path(2, 1))).isNoop)
        // The placeholder itself is neither deletable nor movable.
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 2)))), .notEditable,
            "delete: row [0,2] is the reserved last row of section 0")
        assertError(
            try engine.resolve(.move(from: RowRef(path(0, 2)), to: path(0, 0))), .notMovable,
            "move: row [0,2] is the reserved last row of section 0")
    }

    func testWithinSectionAloneRetargetsToTheFirstOrLastRowOfTheSourceSection() throws {
        let engine = TableEngine(
            table: makeTable([["a0", "a1"], ["b0", "b1", "b2"], ["c0"]], rules: TableRules(moves: .withinSection)))
        XCTAssertEqual(try engine.resolve(.move(from: RowRef(path(1, 1)), to: path(0, 0))).movedRows, [path(1, 0)])
        let later = try engine.resolve(.move(from: RowRef(path(1, 0)), to: path(2, 1)))
        XCTAssertEqual(later.movedRows, [path(1, 2)])
        XCTAssertEqual(later.batch.moveRows, [.init(from: path(1, 0), to: path(1, 2))])
        XCTAssertNoThrow(try engine.resolve(.move(from: RowRef(path(1, 0)), to: path(1, 2))))
    }

    func testMovesNoneRefusesRowMoves() {
        let engine = TableEngine(table: makeTable([["a", "b"]], rules: TableRules(moves: .none)))
        assertError(
            try engine.resolve(.move(from: RowRef(path(0, 0)), to: path(0, 1))), .notMovable,
            "move: rows cannot be moved in this table (moves: none)")
    }

    func testRowsThatAreNotEditableCannotBeDeletedOrReloaded() {
        var table = makeTable([["a", "b"]])
        table.sections[0].rows[1].editable = false
        let engine = TableEngine(table: table)
        assertError(try engine.resolve(.delete(RowRef(path(0, 1)))), .notEditable, "delete: row [0,1] is not editable")
        assertError(
            try engine.resolve(
                .batch(
                    ClientBatch(reloadRows: [
                        .init(row: RowRef(path(0, 0)), value: 1), .init(row: RowRef(path(0, 1)), value: 2),
                    ]))),
            .notEditable, "reloadRows[1]: row [0,1] is not editable")
    }

    /// Setting flags (an admin's edit) unlocks a row that is not editable; the value may change with it.
    func testAReloadThatSetsFlagsMayUnlockARow() throws {
        var table = makeTable([["a", "b"]])
        table.sections[0].rows[1].editable = false
        var engine = TableEngine(table: table)
        let unlock = try engine.resolve(.edit(RowRef(path(0, 1)), value: "b2", editable: true))
        try engine.commit(unlock)
        XCTAssertEqual(engine.table.sections[0].rows[1].value, "b2")
        XCTAssertTrue(engine.table.sections[0].rows[1].editable)
        try engine.commit(try engine.resolve(.delete(RowRef(path(0, 1)))))
        XCTAssertEqual(engine.table.sections[0].rows.map(\.value), ["a"])
    }

    /// editingStyleForRow: `none` has no delete control, so deletes are refused; `insert` is an add-item
    /// placeholder wherever it is: neither deleted nor moved, while rows are inserted and moved next to it.
    func testEditingStyleNoneAndInsertRefuseDeletesAndInsertRefusesMoves() throws {
        var table = makeTable([["a", "add", "b", "keep"]])
        table.sections[0].rows[1].editingStyle = .insert
        table.sections[0].rows[3].editingStyle = .none
        var engine = TableEngine(table: table)
        assertError(
            try engine.resolve(.delete(RowRef(path(0, 1)))), .notEditable,
            "delete: row [0,1] is an add-item placeholder (editingStyle insert)")
        assertError(
            try engine.resolve(.batch(ClientBatch(deleteRows: [RowRef(path(0, 0)), RowRef(path(0, 3))]))), .notEditable,
            "deleteRows[1]: row [0,3] cannot be deleted (editingStyle none)")
        assertError(
            try engine.resolve(.move(from: RowRef(path(0, 1)), to: path(0, 3))), .notMovable,
            "move: row [0,1] is an add-item placeholder (editingStyle insert)")
        // A none row may still be moved and edited; rows go next to the placeholder where they are put.
        try commit(&engine, .move(from: RowRef(path(0, 3)), to: path(0, 0)))
        try commit(&engine, .edit(RowRef(path(0, 0)), value: "kept"))
        let inserted = try commit(&engine, .insert(at: path(0, 3), row: RowContent(value: "c")))
        XCTAssertEqual(inserted.insertedRows, [path(0, 3)])
        try commit(&engine, .move(from: RowRef(path(0, 1)), to: path(0, 3)))
        XCTAssertEqual(values(engine.table), [["kept", "add", "c", "a", "b"]])
        XCTAssertEqual(engine.table.sections[0].rows.map(\.editingStyle), [.none, .insert, .delete, .delete, .delete])
        // Deleting the whole section takes every row, whatever its style.
        XCTAssertNoThrow(try engine.resolve(.deleteSection(SectionRef(0))))
    }

    /// The style is set by an edit (the server lets only admins send it) and kept by edits that leave it out;
    /// an edit that changes only the style is not a no-op, one that repeats it is.
    func testAnEditSetsTheEditingStyleAndItSurvivesTheJSONRoundTrip() throws {
        var engine = TableEngine(table: makeTable([["a", "b"]]))
        let set = try commit(&engine, .edit(RowRef(path(0, 1)), value: "b", editingStyle: .insert))
        XCTAssertFalse(set.isNoop)
        XCTAssertEqual(set.batch.reloadRows, [.init(at: path(0, 1), value: "b", editingStyle: .insert)])
        XCTAssertTrue(try engine.resolve(.edit(RowRef(path(0, 1)), value: "b", editingStyle: .insert)).isNoop)
        try commit(&engine, .edit(RowRef(path(0, 1)), value: "Add item"))
        XCTAssertEqual(engine.table.sections[0].rows[1].editingStyle, .insert)
        // The batch and the table carry the style through their JSON (the log and the snapshot).
        XCTAssertEqual(try Batch(json: set.batch.json), set.batch)
        XCTAssertEqual(try Table(json: engine.table.json), engine.table)
        XCTAssertEqual(
            engine.table.sections[0].rows[1].json, ["id": "r3", "value": "Add item", "editingStyle": "insert"])
        var writer = JSONWriter()
        engine.table.sections[0].rows[1].write(to: &writer)
        XCTAssertEqual(try JSONValue(parsing: writer.bytes), engine.table.sections[0].rows[1].json)
        // A row inserted with a style keeps it.
        try commit(&engine, .insert(at: path(0, 0), row: RowContent(value: "n", editingStyle: .none)))
        XCTAssertEqual(engine.table.sections[0].rows[0].editingStyle, .none)
        XCTAssertThrowsError(try Row(json: ["id": "r9", "value": 1, "editingStyle": "swipe"]))
    }

    // MARK: Every error code from a batch

    func testValidationErrorsNameTheEntryAndTheFact() {
        let engine = TableEngine(table: makeTable([["a", "b", "c"], ["d"]]))
        func resolve(_ batch: ClientBatch) throws -> Resolution { try engine.resolve(.batch(batch)) }
        assertError(
            try resolve(ClientBatch(deleteRows: [RowRef(path(0, 0)), RowRef(path(0, 5))])), .outOfRange,
            "deleteRows[1]: row [0,5] does not exist: section 0 has 3 rows before the update")
        assertError(
            try resolve(ClientBatch(deleteSections: [SectionRef(2)])), .outOfRange,
            "deleteSections[0]: section 2 does not exist: table has 2 sections before the update")
        assertError(
            try resolve(ClientBatch(insertRows: [.init(at: path(0, 4), row: RowContent(value: 1))])), .outOfRange,
            "insertRows[0]: row [0,4] is out of range: section 0 has 4 rows after the update")
        assertError(
            try resolve(ClientBatch(insertSections: [.init(at: 3, section: SectionContent())])), .outOfRange,
            "insertSections[0]: section index 3 is out of range: table has 3 sections after the update")
        assertError(
            try resolve(ClientBatch(deleteRows: [RowRef(path(0, 1)), RowRef(path(0, 1))])), .invalidBatch,
            "deleteRows[1]: row [0,1] is also deleted by deleteRows[0]")
        assertError(
            try resolve(
                ClientBatch(deleteRows: [RowRef(path(0, 1))], reloadRows: [.init(row: RowRef(path(0, 1)), value: 1)])),
            .invalidBatch, "reloadRows[0]: row [0,1] is also deleted by deleteRows[0]")
        assertError(
            try resolve(
                ClientBatch(deleteSections: [SectionRef(1)], moveSections: [.init(from: SectionRef(1), to: 0)])),
            .invalidBatch, "moveSections[0]: section 1 is also deleted by deleteSections[0]")
        assertError(
            try resolve(ClientBatch(deleteSections: [SectionRef(1)], deleteRows: [RowRef(path(1, 0))])), .invalidBatch,
            "deleteRows[0]: row [1,0] is in section 1, which deleteSections[0] deletes")
        assertError(
            try resolve(
                ClientBatch(
                    insertRows: [.init(at: path(0, 1), row: RowContent(value: 1))],
                    moveRows: [.init(from: RowRef(path(1, 0)), to: path(0, 1))])),
            .invalidBatch, "moveRows[0]: row [0,1] is also the destination of insertRows[0]")
        assertError(
            try resolve(ClientBatch(moveRows: [.init(from: RowRef(path(0, 0)), to: path(0, 3))])), .outOfRange,
            "moveRows[0]: row [0,3] is out of range: section 0 has 3 rows after the update")
    }

    func testLimitsAreEnforced() {
        let rules = TableRules(maxSections: 2, maxRowsPerSection: 3, maxValueBytes: 10)
        let engine = TableEngine(table: makeTable([["a", "b", "c"], []], rules: rules))
        assertError(
            try engine.resolve(.insertSection(at: 0, section: SectionContent())), .limitExceeded,
            "insertSection: table would have 3 sections, more than the limit of 2")
        assertError(
            try engine.resolve(.insert(at: path(0, 0), row: RowContent(value: "x"))), .limitExceeded,
            "insert: section 0 would have 4 rows, more than the limit of 3")
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 0)), value: "0123456789")), .limitExceeded,
            "edit: value is 12 bytes, more than the limit of 10")
    }
}
