import TableModel
import XCTest

/// The delegate decisions about rows (Table+Permissions): each refusal, their order when several apply, and that
/// the engine refuses exactly the rows they refuse.
final class TablePermissionsTests: XCTestCase {
    /// One section: plain, locked, unmovable, an insert placeholder, a none row, a locked none row, a plain last row.
    func makeStyledTable(_ rules: TableRules = TableRules()) -> Table {
        Table(
            contents: [
                SectionContent(rows: [
                    RowContent(value: "plain"), RowContent(value: "locked", editable: false),
                    RowContent(value: "pinned", movable: false),
                    RowContent(value: "Add…", editingStyle: .insert), RowContent(value: "water", editingStyle: .none),
                    RowContent(value: "locked water", editable: false, editingStyle: .none), RowContent(value: "last"),
                ]),
                SectionContent(rows: []),
            ], rules: rules)
    }

    var reserving: TableRules { TableRules(reserveLastRow: true) }

    func refusals(_ table: Table, _ refusal: (Table, RowPath) -> RowRefusal?) -> [RowRefusal?] {
        table.sections[0].rows.indices.map { refusal(table, path(0, $0)) }
    }

    func testPlaceholdersAreInsertRowsAnywhereAndTheReservedLastRow() {
        let table = makeStyledTable()
        XCTAssertEqual(table.sections[0].rows.indices.filter { table.isPlaceholder(path(0, $0)) }, [3])
        XCTAssertFalse(table.isReservedLastRow(path(0, 6)))
        let reserved = makeStyledTable(reserving)
        XCTAssertEqual(reserved.sections[0].rows.indices.filter { reserved.isPlaceholder(path(0, $0)) }, [3, 6])
        XCTAssertEqual(reserved.sections[0].rows.indices.filter { reserved.isReservedLastRow(path(0, $0)) }, [6])
    }

    /// Locked first, then the editing style, then the reserved last row (the order of the engine's messages).
    func testDeleteRefusals() {
        XCTAssertEqual(
            refusals(makeStyledTable()) { $0.deleteRefusal(at: $1) },
            [nil, .notEditable, nil, .insertionControl, .noDeleteControl, .notEditable, nil])
        XCTAssertEqual(refusals(makeStyledTable(reserving)) { $0.deleteRefusal(at: $1) }.last, .reservedLastRow)
        var noneLast = makeStyledTable(reserving)
        noneLast.sections[0].rows[6].editingStyle = .none
        XCTAssertEqual(noneLast.deleteRefusal(at: path(0, 6)), .noDeleteControl)
        XCTAssertEqual(RowRefusal.reservedLastRow.isPlaceholder, true)
        XCTAssertEqual(RowRefusal.noDeleteControl.isPlaceholder, false)
    }

    /// The `moves` rule first, then `movable`, then placeholders; a none row and a locked row move.
    func testMoveRefusals() {
        XCTAssertEqual(
            refusals(makeStyledTable()) { $0.moveRefusal(at: $1) },
            [nil, nil, .notMovable, .insertionControl, nil, nil, nil])
        XCTAssertEqual(refusals(makeStyledTable(reserving)) { $0.moveRefusal(at: $1) }.last, .reservedLastRow)
        XCTAssertEqual(
            refusals(makeStyledTable(TableRules(moves: .withinSection))) { $0.moveRefusal(at: $1) },
            refusals(makeStyledTable()) { $0.moveRefusal(at: $1) })
        XCTAssertEqual(
            refusals(makeStyledTable(TableRules(moves: .none))) { $0.moveRefusal(at: $1) },
            Array(repeating: .noMoves, count: 7))
    }

    /// Only locked rows refuse a reload, and not one that sets flags (an admin's unlock).
    func testReloadRefusals() {
        let table = makeStyledTable(reserving)
        XCTAssertEqual(
            refusals(table) { $0.reloadRefusal(at: $1) }, [nil, .notEditable, nil, nil, nil, .notEditable, nil])
        XCTAssertEqual(refusals(table) { $0.reloadRefusal(at: $1, setsFlags: true) }, Array(repeating: nil, count: 7))
    }

    /// The engine refuses a row's delete, move or plain edit exactly when the table's refusal says so, under every
    /// combination of `moves` and `reserveLastRow`.
    func testTheEngineRefusesWhatTheRefusalsSay() {
        for moves in TableRules.Moves.allCases {
            for reserveLastRow in [false, true] {
                let table = makeStyledTable(TableRules(moves: moves, reserveLastRow: reserveLastRow))
                let engine = TableEngine(table: table)
                for row in table.sections[0].rows.indices {
                    let at = path(0, row)
                    let context = "row \(row), moves \(moves), reserveLastRow \(reserveLastRow)"
                    XCTAssertEqual(
                        code(try engine.resolve(.delete(RowRef(at)))),
                        table.deleteRefusal(at: at).map { _ in .notEditable }, context)
                    XCTAssertEqual(
                        code(try engine.resolve(.move(from: RowRef(at), to: path(0, 0)))),
                        table.moveRefusal(at: at).map { _ in .notMovable }, context)
                    XCTAssertEqual(
                        code(try engine.resolve(.edit(RowRef(at), value: "new"))),
                        table.reloadRefusal(at: at).map { _ in .notEditable }, context)
                }
            }
        }
    }

    /// The code of the TableError `body` throws, or nil when it throws none.
    func code(_ body: @autoclosure () throws -> Resolution) -> TableError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as TableError {
            return error.code
        } catch {
            XCTFail("not a TableError: \(error)")
            return nil
        }
    }
}
