import TableModel
import XCTest

/// Limits apply to changes made after them: lowering one below what a table holds neither breaks the table nor
/// its replay, and only changes that grow past the limit are refused.
final class TableEngineLimitTests: XCTestCase {
    /// Three sections holding 3, 1 and 0 rows, one value of 12 bytes, with limits lowered below all of it.
    func overfullEngine() throws -> TableEngine {
        var engine = TableEngine(table: makeTable([["a", "b", "0123456789"], ["d"], []]))
        engine.setRules(TableRules(maxSections: 1, maxRowsPerSection: 2, maxValueBytes: 10))
        return engine
    }

    func commit(_ engine: inout TableEngine, _ intent: Intent) throws {
        try engine.commit(try engine.resolve(intent))
    }

    /// Issue 10 item 1: a plain delete on a table over `maxSections` trapped (an insertSections label for a
    /// batch with no insert).
    func testChangesThatDoNotGrowAreAllowedOverTheLimits() throws {
        var engine = try overfullEngine()
        try commit(&engine, .delete(RowRef(path(0, 0))))
        try commit(&engine, .move(from: RowRef(path(0, 1)), to: path(0, 0)))
        try commit(&engine, .edit(RowRef(path(1, 0)), value: "e"))
        // An oversized value may be replaced by one no bigger, and moved to a section that stays within its limit.
        try commit(&engine, .edit(RowRef(path(0, 0)), value: "9876543210"))
        try commit(&engine, .move(from: RowRef(path(0, 0)), to: path(2, 0)))
        // A batch that deletes as many sections as it inserts keeps the count.
        try commit(
            &engine,
            .batch(
                ClientBatch(
                    deleteSections: [SectionRef(1)],
                    insertSections: [.init(at: 0, section: SectionContent(header: "n"))])))
        try commit(&engine, .deleteSection(SectionRef(0)))
        XCTAssertEqual(values(engine.table), [["b"], ["9876543210"]])
    }

    func testChangesThatGrowPastALimitAreRefusedNamingTheEntry() throws {
        let engine = try overfullEngine()
        assertError(
            try engine.resolve(.insertSection(at: 0, section: SectionContent())), .limitExceeded,
            "insertSection: table would have 4 sections, more than the limit of 1")
        assertError(
            try engine.resolve(
                .batch(
                    ClientBatch(
                        insertSections: [.init(at: 3, section: SectionContent())], deleteRows: [RowRef(path(0, 0))]))),
            .limitExceeded, "insertSections[0]: table would have 4 sections, more than the limit of 1")
        assertError(
            try engine.resolve(.insert(at: path(0, 0), row: RowContent(value: "x"))), .limitExceeded,
            "insert: section 0 would have 4 rows, more than the limit of 2")
        assertError(
            try engine.resolve(
                .batch(
                    ClientBatch(
                        deleteRows: [RowRef(path(0, 1))],
                        moveRows: [
                            .init(from: RowRef(path(0, 0)), to: path(1, 0)),
                            .init(from: RowRef(path(0, 2)), to: path(1, 1)),
                        ]))),
            .limitExceeded, "moveRows[0]: section 1 would have 3 rows, more than the limit of 2")
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 2)), value: "0123456789x")), .limitExceeded,
            "edit: value is 13 bytes, more than the limit of 10")
        assertError(
            try engine.resolve(.edit(RowRef(path(0, 0)), value: "0123456789")), .limitExceeded,
            "edit: value is 12 bytes, more than the limit of 10")
    }

    /// Issue 10 item 2: batches committed before a limit was lowered replay under the lowered limit.
    func testReplayIgnoresLimitsLoweredAfterTheBatches() throws {
        var engine = TableEngine(table: makeTable([["a"]]))
        let snapshot = engine.table
        var batches: [Batch] = []
        for intent in [
            Intent.insertSection(
                at: 1, section: SectionContent(rows: [RowContent(value: "b"), RowContent(value: "c")])),
            .insert(at: path(0, 1), row: RowContent(value: "0123456789")),
        ] {
            let resolution = try engine.resolve(intent)
            try engine.commit(resolution)
            batches.append(resolution.batch)
        }
        var lowered = snapshot
        lowered.rules = TableRules(maxSections: 1, maxRowsPerSection: 1, maxValueBytes: 5)
        let replayed = try TableEngine(snapshot: lowered, replaying: batches)
        XCTAssertEqual(values(replayed.table), [["a", "0123456789"], ["b", "c"]])
        XCTAssertEqual(replayed.table.version, 2)
    }
}
