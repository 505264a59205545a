import TableModel
import TablecastTesting
import XCTest

final class OptimisticTableTests: XCTestCase {
    private let letters = Table(contents: [
        SectionContent(header: "A", rows: ["a", "b", "c", "d", "e"].map { RowContent(value: .string($0)) }),
        SectionContent(header: "B", rows: ["x", "y"].map { RowContent(value: .string($0)) }),
    ])

    private func ref(_ table: Table, _ section: Int, _ row: Int) -> RowRef {
        RowRef(RowPath(section: section, row: row), id: table.sections[section].rows[row].id)
    }

    /// `J J J`: three moves down, each made from the predicted view before the server answered the first, move
    /// the row three places, at once and after the server answered.
    func testQuickSuccessiveMovesCompose() throws {
        var harness = OptimisticHarness(table: letters, clients: 2)
        for step in 0..<3 {
            let predicted = harness.clients[0].predicted
            try harness.submit(0, .move(from: ref(predicted, 0, step), to: RowPath(section: 0, row: step + 1)))
        }
        XCTAssertEqual(harness.clients[0].predicted.values(0), ["b", "c", "d", "a", "e"])
        XCTAssertEqual(harness.clients[0].pendingCount, 3)
        try harness.settle()
        XCTAssertEqual(harness.server.table.values(0), ["b", "c", "d", "a", "e"])
        for client in harness.clients { XCTAssertEqual(client.predicted, harness.server.table) }
    }

    /// Delete then insert in a burst; the insert's provisional id is replaced by the server's.
    func testDeleteThenInsertInABurst() throws {
        var harness = OptimisticHarness(table: letters, clients: 1)
        try harness.submit(0, .delete(ref(letters, 0, 1)))
        try harness.submit(0, .insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "new")))
        let predicted = harness.clients[0].predicted
        XCTAssertEqual(predicted.values(0), ["a", "new", "c", "d", "e"])
        XCTAssertTrue(OptimisticTable.isProvisional(predicted.sections[0].rows[1].id))
        // Edit the provisional row too: the edit names it by its provisional id.
        try harness.submit(0, .edit(ref(predicted, 0, 1), value: "newer"))
        XCTAssertEqual(harness.clients[0].predicted.values(0), ["a", "newer", "c", "d", "e"])
        try harness.settle()
        XCTAssertEqual(harness.clients[0].predicted, harness.server.table)
        XCTAssertEqual(harness.server.table.values(0), ["a", "newer", "c", "d", "e"])
    }

    /// Others' updates arriving while intents are pending: the in-flight intent is rebased by the engine, the
    /// queued ones re-materialized around what others did.
    func testOthersChangesUnderPendingIntents() throws {
        var harness = OptimisticHarness(table: letters, clients: 2)
        try harness.submit(0, .delete(ref(letters, 0, 2))) // c, in flight
        try harness.submit(0, .insert(at: RowPath(section: 0, row: 2), row: RowContent(value: "c2"))) // after b, queued
        try harness.submit(1, .insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "first")))
        harness.serve(1)
        try harness.deliver(0) // the other's insert reaches client 0 before its own delete was served
        XCTAssertEqual(harness.clients[0].predicted.values(0), ["first", "a", "b", "c2", "d", "e"])
        try harness.settle()
        XCTAssertEqual(harness.server.table.values(0), ["first", "a", "b", "c2", "d", "e"])
        for client in harness.clients { XCTAssertEqual(client.predicted, harness.server.table) }
    }

    /// A refused intent is dropped and reported with its error, and the view springs back; a queued intent that
    /// named what the refused one would have created is refused too.
    func testRefusalSpringsBack() throws {
        var rules = TableRules()
        rules.maxRowsPerSection = 6
        var table = letters
        table.rules = rules
        var harness = OptimisticHarness(table: table, clients: 2)
        try harness.submit(0, .insert(at: RowPath(section: 0, row: 5), row: RowContent(value: "f")))
        let provisional = harness.clients[0].predicted.sections[0].rows[5]
        try harness.submit(0, .edit(RowRef(RowPath(section: 0, row: 5), id: provisional.id), value: "f2"))
        try harness.submit(1, .insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "other")))
        harness.serve(1) // the other client fills the section first
        harness.serve(0)
        try harness.settle()
        XCTAssertEqual(harness.refusals[0].map(\.error.code), [.limitExceeded, .conflict])
        XCTAssertEqual(
            harness.refusals[0][0].intent, .insert(at: RowPath(section: 0, row: 5), row: RowContent(value: "f")))
        for client in harness.clients { XCTAssertEqual(client.predicted, harness.server.table) }
        XCTAssertFalse(harness.clients[0].canUndo, "refused changes leave no undo step")
    }

    /// Offline edits are bounded: past the limit, submit refuses and nothing changes.
    func testPendingLimit() throws {
        var optimistic = OptimisticTable(confirmed: TableEngine(table: letters), pendingLimit: 2)
        _ = try optimistic.submit(.edit(ref(letters, 0, 0), value: "1"))
        _ = try optimistic.submit(.edit(ref(letters, 0, 0), value: "2"))
        let before = optimistic.predicted
        XCTAssertThrowsError(try optimistic.submit(.edit(ref(letters, 0, 0), value: "3"))) {
            XCTAssertEqual(($0 as? TableError)?.code, .limitExceeded)
        }
        XCTAssertEqual(optimistic.predicted, before)
    }

    // MARK: Undo and redo

    /// Every intent kind, undone and redone: the content comes back exactly (rows restored with new ids).
    func testUndoRedoOfEveryIntentKind() throws {
        let row = RowContent(value: "n", movable: false)
        var flagged = letters
        flagged.sections[0].rows[1].movable = false
        let intents: [(String, Intent)] = [
            ("insert", .insert(at: RowPath(section: 0, row: 2), row: row)),
            ("delete", .delete(ref(flagged, 0, 1))),
            ("move", .move(from: ref(flagged, 0, 0), to: RowPath(section: 1, row: 1))),
            ("edit", .edit(ref(flagged, 0, 3), value: "D", editable: false)),
            ("patch", .patch(ref(flagged, 0, 3), patch: ["title": "D"])),
            ("insertSection", .insertSection(at: 1, section: SectionContent(header: "N", rows: [row, row]))),
            ("deleteSection", .deleteSection(SectionRef(0, id: flagged.sections[0].id))),
            ("moveSection", .moveSection(from: SectionRef(1, id: flagged.sections[1].id), to: 0)),
            (
                "editSection",
                .editSection(SectionRef(1, id: flagged.sections[1].id), header: .some("BB"), footer: .some("f"))
            ),
            ("editSection rows", .editSection(SectionRef(1, id: flagged.sections[1].id), rows: [row])),
            (
                "batch",
                .batch(
                    ClientBatch(
                        deleteRows: [ref(flagged, 0, 0), ref(flagged, 0, 4)],
                        insertRows: [.init(at: RowPath(section: 1, row: 0), row: row)],
                        reloadRows: [.init(row: ref(flagged, 0, 2), value: "C")],
                        moveRows: [.init(from: ref(flagged, 1, 1), to: RowPath(section: 0, row: 0))]))
            ),
        ]
        for (name, intent) in intents {
            var harness = OptimisticHarness(table: flagged, clients: 2)
            try harness.submit(0, intent)
            try harness.settle()
            let done = Content(harness.server.table)
            XCTAssertNotEqual(done, Content(flagged), name)
            XCTAssertNotNil(try harness.undo(0), name)
            XCTAssertEqual(Content(harness.clients[0].predicted), Content(flagged), "\(name): undo is shown at once")
            try harness.settle()
            XCTAssertEqual(Content(harness.server.table), Content(flagged), "\(name): undo")
            XCTAssertEqual(harness.clients[1].predicted, harness.server.table, name)
            XCTAssertNotNil(try harness.redo(0), name)
            try harness.settle()
            XCTAssertEqual(Content(harness.server.table), done, "\(name): redo")
            XCTAssertNotNil(try harness.undo(0), name)
            try harness.settle()
            XCTAssertEqual(Content(harness.server.table), Content(flagged), "\(name): undo of the redo")
            XCTAssertTrue(harness.refusals[0].isEmpty, name)
        }
    }

    /// Undo respects others' changes: a deleted row comes back right after the row that preceded it, wherever
    /// that is now; and an edit whose row someone else deleted cannot be undone, which says so and touches
    /// nothing.
    func testUndoAcrossOthersChanges() throws {
        var harness = OptimisticHarness(table: letters, clients: 2)
        try harness.submit(0, .delete(ref(letters, 0, 2))) // c
        try harness.submit(0, .edit(ref(harness.clients[0].predicted, 0, 3), value: "E"))
        try harness.settle()
        let other = harness.clients[1].predicted
        try harness.submit(1, .move(from: ref(other, 0, 1), to: RowPath(section: 1, row: 0))) // b to section 1
        try harness.submit(1, .delete(ref(harness.clients[1].predicted, 0, 2))) // E
        try harness.settle()
        let before = harness.server.table
        XCTAssertThrowsError(try harness.undo(0)) { error in
            let error = error as! TableError
            XCTAssertEqual(error.code, .conflict)
            XCTAssertTrue(error.message.hasPrefix("undo: cannot undo: "), error.message)
        }
        XCTAssertEqual(harness.clients[0].predicted, before, "a step that cannot be undone changes nothing")
        // The delete of c: back in its section, after its nearest predecessor still there (b moved away).
        XCTAssertNotNil(try harness.undo(0))
        try harness.settle()
        XCTAssertEqual(harness.server.table.values(0), ["a", "c", "d"])
        XCTAssertEqual(harness.server.table.values(1), ["b", "x", "y"])
        for client in harness.clients { XCTAssertEqual(client.predicted, harness.server.table) }
        XCTAssertNil(try harness.undo(0), "nothing left to undo")
    }

    // MARK: Property

    /// Random intents (undo and redo among them) from several clients, with random delivery: once everything is
    /// answered, every client's prediction is the server's table, and nothing refused left a trace.
    func testPredictionsConvergeUnderRandomDelivery() {
        withSeed { generator in
            for _ in 0..<150 {
                var table = RandomTables.table(using: &generator)
                if Bool.random(using: &generator) { table.rules.moves = .withinSection }
                if Int.random(in: 0..<4, using: &generator) == 0 { table.rules.maxRowsPerSection = 4 }
                var harness = OptimisticHarness(table: table, clients: 3)
                for _ in 0..<Int.random(in: 1...40, using: &generator) { try harness.randomStep(using: &generator) }
                // Drain in random order.
                while !harness.isQuiet {
                    let client = Int.random(in: 0..<3, using: &generator)
                    if Bool.random(using: &generator), !harness.requests[client].isEmpty {
                        harness.serve(client)
                    } else if !harness.inboxes[client].isEmpty {
                        try harness.deliver(client)
                    }
                }
                for (index, client) in harness.clients.enumerated() {
                    XCTAssertEqual(client.pendingCount, 0)
                    XCTAssertEqual(client.predicted, harness.server.table, "client \(index)")
                    XCTAssertEqual(client.confirmed.table, harness.server.table, "client \(index)")
                }
                if harness.clients.contains(where: { $0.predicted != harness.server.table }) { return }
            }
        }
    }
}
