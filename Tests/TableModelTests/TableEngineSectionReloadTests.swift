import TableModel
import XCTest

/// `reloadSections` (and `editSection`) with `rows` replace all the rows of a section, as UIKit's reloadSections
/// reloads them; committed as deleteRows + insertRows so that replicas need nothing new (issue 10, item 12).
final class TableEngineSectionReloadTests: XCTestCase {
    func testARowsReloadReplacesTheSectionsRowsWithNewIds() throws {
        var engine = TableEngine(
            table: Table(contents: [
                SectionContent(header: "H", rows: [RowContent(value: "a"), RowContent(value: "b")])
            ]))
        let resolution = try engine.resolve(
            .editSection(
                SectionRef(0, id: "s1"), rows: [RowContent(value: "x"), RowContent(value: "y"), RowContent(value: "z")])
        )
        XCTAssertEqual(resolution.createdIDs, ["r4", "r5", "r6"])
        XCTAssertEqual(resolution.insertedRows, [])
        XCTAssertEqual(
            resolution.batch,
            Batch(
                deleteRows: [path(0, 0), path(0, 1)],
                insertRows: [
                    .init(at: path(0, 0), row: Row(id: "r4", value: "x")),
                    .init(at: path(0, 1), row: Row(id: "r5", value: "y")),
                    .init(at: path(0, 2), row: Row(id: "r6", value: "z")),
                ]))
        var replica = engine.table
        try engine.commit(resolution)
        try replica.apply(resolution.batch)
        XCTAssertEqual(replica, engine.table)
        XCTAssertEqual(engine.table.sections[0].header, "H")
        XCTAssertEqual(values(engine.table), [["x", "y", "z"]])
        // An empty list clears the section; with a header change, both are one update.
        try engine.commit(try engine.resolve(.editSection(SectionRef(0), header: "H2", rows: [])))
        XCTAssertEqual(engine.table.sections.map(\.header), ["H2"])
        XCTAssertEqual(values(engine.table), [[]])
    }

    /// In a batch the section is found at its final index; ids follow the client's own inserts.
    func testInABatchTheRowsGoToTheSectionsFinalIndex() throws {
        let engine = TableEngine(table: makeTable([["a"], ["b", "c"]]))
        let resolution = try engine.resolve(
            .batch(
                ClientBatch(
                    insertSections: [.init(at: 0, section: SectionContent())],
                    reloadSections: [.init(section: SectionRef(1), rows: [RowContent(value: "n")])],
                    insertRows: [.init(at: path(1, 1), row: RowContent(value: "i"))])))
        XCTAssertEqual(resolution.insertedRows, [path(1, 1)])
        XCTAssertEqual(resolution.createdIDs, ["s6", "r7", "r8"])
        var table = engine.table
        try table.apply(resolution.batch)
        XCTAssertEqual(values(table), [[], ["a", "i"], ["n"]])
    }

    func testOtherEntriesMayNotTouchTheReplacedRows() {
        let engine = TableEngine(table: makeTable([["a"], ["b", "c"]]))
        let reload = ClientBatch.SectionReload(section: SectionRef(1), rows: [RowContent(value: "n")])
        assertError(
            try engine.resolve(
                .batch(ClientBatch(reloadSections: [reload], deleteRows: [RowRef(path(0, 0)), RowRef(path(1, 0))]))),
            .invalidBatch, "deleteRows[1]: row [1,0] is in section 1, whose rows reloadSections[0] replaces")
        assertError(
            try engine.resolve(
                .batch(
                    ClientBatch(reloadSections: [reload], moveRows: [.init(from: RowRef(path(0, 0)), to: path(1, 1))]))),
            .invalidBatch, "moveRows[0]: row [1,1] is in section 1, whose rows reloadSections[0] replaces")
        assertError(
            try engine.resolve(
                .batch(ClientBatch(reloadSections: [reload], reloadRows: [.init(row: RowRef(path(1, 1)), value: 1)]))),
            .invalidBatch, "reloadRows[0]: row [1,1] is in section 1, whose rows reloadSections[0] replaces")
        assertError(
            try engine.resolve(.batch(ClientBatch(deleteSections: [SectionRef(1)], reloadSections: [reload]))),
            .invalidBatch, "reloadSections[0]: section 1 is also deleted by deleteSections[0]")
    }

    func testLockedRowsThePlaceholderAndTheLimits() throws {
        var locked = makeTable([["a", "b"]])
        locked.sections[0].rows[1].editable = false
        assertError(
            try TableEngine(table: locked).resolve(
                .batch(ClientBatch(reloadSections: [.init(section: SectionRef(0), rows: [])]))),
            .notEditable, "reloadSections[0]: row [0,1] is not editable")

        let placeholders = TableEngine(table: makeTable([["a", "b", "add"]], rules: TableRules(reserveLastRow: true)))
        var table = placeholders.table
        try table.apply(try placeholders.resolve(.editSection(SectionRef(0), rows: [RowContent(value: "x")])).batch)
        XCTAssertEqual(values(table), [["x", "add"]])

        let limited = TableEngine(table: makeTable([["a"]], rules: TableRules(maxRowsPerSection: 2, maxValueBytes: 5)))
        assertError(
            try limited.resolve(
                .editSection(SectionRef(0), rows: [RowContent(value: 1), RowContent(value: 2), RowContent(value: 3)])),
            .limitExceeded, "editSection: section 0 would have 3 rows, more than the limit of 2")
        assertError(
            try limited.resolve(
                .batch(
                    ClientBatch(reloadSections: [.init(section: SectionRef(0), rows: [RowContent(value: "toolong")])]))),
            .limitExceeded, "reloadSections[0]: value is 9 bytes, more than the limit of 5")
    }

    /// A stale reload replaces the rows the section has now; stale intents naming a replaced row meet a deleted row.
    func testStaleIntentsAndReplacedRows() throws {
        var engine = TableEngine(table: makeTable([["a", "b"]]))
        try engine.commit(try engine.resolve(.insert(at: path(0, 2), row: RowContent(value: "late"))))
        try engine.commit(try engine.resolve(.editSection(SectionRef(0), rows: [RowContent(value: "x")]), base: 0))
        XCTAssertEqual(values(engine.table), [["x"]])
        XCTAssertTrue(try engine.resolve(.delete(RowRef(path(0, 1))), base: 1).isNoop)
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 1)), value: "b2"), base: 1), .conflict,
            "edit: row [0,1] of version 1 has been deleted since")
    }
}
