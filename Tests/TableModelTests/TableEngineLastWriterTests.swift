import TableModel
import XCTest

/// Concurrent changes of one row or section from the same base: the last writer wins for a value, a header or a
/// footer; `conflict` is only for a target that no longer exists or is not the one named (issue 10, item 9).
final class TableEngineLastWriterTests: XCTestCase {
    @discardableResult
    func commit(_ engine: inout TableEngine, _ intent: Intent, base: UInt64) throws -> Resolution {
        let resolution = try engine.resolve(intent, base: base)
        try engine.commit(resolution)
        return resolution
    }

    func testTheLaterEditOfARowWinsWithoutAConflict() throws {
        var engine = TableEngine(table: makeTable([["a", "b"]]))
        try commit(&engine, .edit(RowRef(path(0, 1), id: "r3"), value: "alice"), base: 0)
        let bob = try commit(&engine, .edit(RowRef(path(0, 1), id: "r3"), value: "bob"), base: 0)
        XCTAssertEqual(bob.version, 2)
        XCTAssertEqual(bob.batch.reloadRows, [.init(at: path(0, 1), value: "bob")])
        XCTAssertEqual(values(engine.table), [["a", "bob"]])
    }

    /// The edit follows its row through what was committed since, and a delete of an edited row deletes it.
    func testAStaleEditFollowsItsRowAndAStaleDeleteWinsOverAnEdit() throws {
        var engine = TableEngine(table: makeTable([["a", "b"], ["c"]]))
        try commit(&engine, .move(from: RowRef(path(0, 1)), to: path(1, 0)), base: 0)
        try commit(&engine, .edit(RowRef(path(0, 1)), value: "b2"), base: 0)
        XCTAssertEqual(values(engine.table), [["a"], ["b2", "c"]])
        try commit(&engine, .delete(RowRef(path(1, 0), id: "r3")), base: 1)
        XCTAssertEqual(values(engine.table), [["a"], ["c"]])
    }

    func testSectionHeadersAndFootersAreLastWriterWinsPerField() throws {
        var engine = TableEngine(table: Table(contents: [SectionContent(header: "H", footer: "F")]))
        try commit(&engine, .editSection(SectionRef(0), header: "alice"), base: 0)
        try commit(&engine, .editSection(SectionRef(0), header: "bob", footer: .some(nil)), base: 0)
        XCTAssertEqual(engine.table.sections[0].header, "bob")
        XCTAssertNil(engine.table.sections[0].footer)
    }

    /// What is a conflict: the row was deleted since, or the id given is not the row's; a row locked since is
    /// refused by the rules as they are now.
    func testDeletedRowsMismatchedIdsAndLockedRowsAreRefused() throws {
        var engine = TableEngine(table: makeTable([["a", "b", "c"]]))
        try commit(&engine, .delete(RowRef(path(0, 0))), base: 0)
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 0)), value: "x"), base: 0), .conflict,
            "edit: row [0,0] of version 0 has been deleted since")
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 1), id: "r2"), value: "x"), base: 0), .conflict,
            "edit: row [0,1] of version 0 is now row [0,0], which is r3, not r2")
        try commit(&engine, .edit(RowRef(path(0, 1)), value: "c", editable: false), base: 1)
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 1)), value: "x"), base: 1), .notEditable,
            "edit: row [0,1] is not editable")
    }
}
