import TableModel
import XCTest

/// `moves: withinSection` retargets each proposed move of a batch in turn, so that several moves retargeted into
/// one section do not collide (issue 10, item 10).
final class TableEngineRetargetingTests: XCTestCase {
    func resolved(_ engine: TableEngine, _ batch: ClientBatch) throws -> (rows: [[String]], moved: [RowPath]) {
        let resolution = try engine.resolve(.batch(batch))
        var table = engine.table
        try table.apply(resolution.batch)
        return (values(table), resolution.movedRows)
    }

    func testMovesTowardAnEarlierSectionTakeTheFirstRowsInEntryOrder() throws {
        let engine = TableEngine(
            table: makeTable([["a0", "a1"], ["b0", "b1", "b2"], ["c0"]], rules: TableRules(moves: .withinSection)))
        let result = try resolved(
            engine,
            ClientBatch(moveRows: [
                .init(from: RowRef(path(1, 1)), to: path(0, 0)), .init(from: RowRef(path(1, 2)), to: path(0, 1)),
            ]))
        XCTAssertEqual(result.moved, [path(1, 0), path(1, 1)])
        XCTAssertEqual(result.rows[1], ["b1", "b2", "b0"])
    }

    func testMovesTowardALaterSectionTakeTheLastRowsInEntryOrder() throws {
        let engine = TableEngine(
            table: makeTable([["a0", "a1"], ["b0", "b1", "b2"], ["c0"]], rules: TableRules(moves: .withinSection)))
        let result = try resolved(
            engine,
            ClientBatch(moveRows: [
                .init(from: RowRef(path(1, 0)), to: path(2, 0)), .init(from: RowRef(path(1, 1)), to: path(2, 1)),
            ]))
        XCTAssertEqual(result.moved, [path(1, 1), path(1, 2)])
        XCTAssertEqual(result.rows[1], ["b2", "b0", "b1"])
    }

    /// A retargeted move leaves the section it was proposed into, and what the batch places after it there closes up.
    func testTheSectionAMoveWasProposedIntoClosesUp() throws {
        let engine = TableEngine(
            table: makeTable([["a0"], ["b0", "b1", "b2"]], rules: TableRules(moves: .withinSection)))
        let result = try resolved(
            engine,
            ClientBatch(
                insertRows: [.init(at: path(0, 2), row: RowContent(value: "n"))],
                moveRows: [.init(from: RowRef(path(1, 2)), to: path(0, 1))]))
        XCTAssertEqual(result.moved, [path(1, 0)])
        XCTAssertEqual(result.rows, [["a0", "n"], ["b2", "b0", "b1"]])
    }

    /// A retargeted move skips rows the batch's other entries take, and the reserved last row stays last.
    func testRetargetedMovesLeaveOtherPlacementsAndThePlaceholderAlone() throws {
        let withinSection = TableEngine(
            table: makeTable([["a0"], ["b0", "b1", "b2"]], rules: TableRules(moves: .withinSection)))
        let result = try resolved(
            withinSection,
            ClientBatch(
                insertRows: [.init(at: path(1, 0), row: RowContent(value: "n"))],
                moveRows: [.init(from: RowRef(path(1, 2)), to: path(0, 0))]))
        XCTAssertEqual(result.moved, [path(1, 1)])
        XCTAssertEqual(result.rows[1], ["n", "b2", "b0", "b1"])

        let rules = TableRules(moves: .withinSection, reserveLastRow: true)
        let placeholders = TableEngine(
            table: makeTable([["a0", "add"], ["b0", "b1", "b2", "add"], ["c0", "add"]], rules: rules))
        let later = try resolved(
            placeholders,
            ClientBatch(moveRows: [
                .init(from: RowRef(path(1, 0)), to: path(2, 0)), .init(from: RowRef(path(1, 1)), to: path(2, 1)),
            ]))
        XCTAssertEqual(later.moved, [path(1, 1), path(1, 2)])
        XCTAssertEqual(later.rows, [["a0", "add"], ["b2", "b0", "b1", "add"], ["c0", "add"]])
    }
}
