import TableModel
import XCTest

/// What is queued while a request is in flight goes as one batch when the answer comes.
final class OptimisticQueueTests: XCTestCase {
    private let letters = Table(contents: [
        SectionContent(header: "A", rows: ["a", "b", "c", "d", "e"].map { RowContent(value: .string($0)) }),
        SectionContent(header: "B", rows: ["x", "y"].map { RowContent(value: .string($0)) }),
    ])

    private func ref(_ table: Table, _ section: Int, _ row: Int) -> RowRef {
        RowRef(RowPath(section: section, row: row), id: table.sections[section].rows[row].id)
    }

    /// A server engine answering one client's requests.
    private struct Server {
        var engine: TableEngine

        /// Commits `outgoing` as the server does, returns the update and the created ids for the client.
        mutating func serve(_ outgoing: OptimisticTable.Outgoing) throws -> (Batch, [String]) {
            let resolution = try engine.resolve(outgoing.intent, base: outgoing.base)
            try engine.commit(resolution)
            return (resolution.batch, resolution.createdIDs)
        }
    }

    /// Answers the in-flight request from `server` (update, then ack) and returns the outcome.
    private func answer(_ client: inout OptimisticTable, _ server: inout Server, _ outgoing: OptimisticTable.Outgoing)
        throws -> OptimisticTable.Outcome
    {
        let (batch, created) = try server.serve(outgoing)
        if !batch.isEmpty { try client.receive(batch, own: true) }
        return client.acknowledge(created: created)
    }

    /// J ten times: the first move goes alone; the nine queued meanwhile go as one move when it is acked; the
    /// server commits two versions; undo still undoes one J at a time.
    func testTenMovesGoAsOneRequestAfterTheFirst() throws {
        let list = Table(contents: [SectionContent(rows: (0..<12).map { RowContent(value: .string("\($0)")) })])
        var client = OptimisticTable(confirmed: TableEngine(table: list))
        var server = Server(engine: TableEngine(table: list))
        var first: OptimisticTable.Outgoing?
        for step in 0..<10 {
            let submission = try client.submit(
                .move(from: ref(client.predicted, 0, step), to: RowPath(section: 0, row: step + 1)))
            if step == 0 { first = submission.send } else { XCTAssertNil(submission.send) }
        }
        XCTAssertEqual(client.pendingCount, 10)
        let outcome = try answer(&client, &server, XCTUnwrap(first))
        XCTAssertEqual(outcome.accepted, [1])
        XCTAssertEqual(outcome.answered, [1])
        let batch = try XCTUnwrap(outcome.send)
        XCTAssertEqual(batch.id, 2)
        XCTAssertEqual(batch.base, 1)
        XCTAssertEqual(
            batch.intent,
            .move(
                from: RowRef(RowPath(section: 0, row: 1), id: list.sections[0].rows[0].id),
                to: RowPath(section: 0, row: 10)))
        XCTAssertEqual(client.pendingCount, 9)
        let last = try answer(&client, &server, batch)
        XCTAssertEqual(last.accepted, Array(2...10))
        XCTAssertEqual(last.answered, Array(2...10))
        // Each J's part of the ack: where that J put the row (the batch landed where expected).
        for id in 2...10 {
            XCTAssertEqual(last.shares[id], OptimisticTable.Share(rows: [RowPath(section: 0, row: id)]))
        }
        XCTAssertNil(last.send)
        XCTAssertEqual(server.engine.table.version, 2)
        XCTAssertEqual(client.predicted.sections, server.engine.table.sections)
        XCTAssertEqual(client.predicted.sections[0].rows[10].value, "0")

        let undo = try XCTUnwrap(try client.undo())
        XCTAssertEqual(client.predicted.sections[0].rows[9].value, "0")
        XCTAssertEqual(
            undo.send?.intent,
            .move(
                from: RowRef(RowPath(section: 0, row: 10), id: list.sections[0].rows[0].id),
                to: RowPath(section: 0, row: 9)))
    }

    /// Rows inserted, edited and deleted in a burst: the batch inserts each surviving new row once, with its
    /// final value, and the ack's ids replace the provisional ones everywhere, undo steps included.
    func testInsertedRowsGetTheirFinalContentAndRealIDs() throws {
        var client = OptimisticTable(confirmed: TableEngine(table: letters))
        var server = Server(engine: TableEngine(table: letters))
        let first = try XCTUnwrap(try client.submit(.delete(ref(letters, 0, 4))).send)
        _ = try client.submit(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "p")))
        _ = try client.submit(.insert(at: RowPath(section: 1, row: 0), row: RowContent(value: "q")))
        _ = try client.submit(.edit(ref(client.predicted, 0, 0), value: "p2"))
        _ = try client.submit(.delete(ref(client.predicted, 1, 0)))
        let batch = try XCTUnwrap(try answer(&client, &server, first).send)
        XCTAssertEqual(
            batch.intent, .insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "p2")))
        let outcome = try answer(&client, &server, batch)
        XCTAssertEqual(client.predicted.sections, server.engine.table.sections)
        // The insert of p gets p's id and place; q's insert its place but no id (q was deleted in the same batch,
        // so never created); the edit nothing.
        let p = server.engine.table.sections[0].rows[0]
        XCTAssertEqual(outcome.shares[2], OptimisticTable.Share(created: [p.id], rows: [RowPath(section: 0, row: 0)]))
        XCTAssertEqual(outcome.shares[3], OptimisticTable.Share(rows: [RowPath(section: 1, row: 0)]))
        XCTAssertEqual(outcome.shares[4], OptimisticTable.Share())
        XCTAssertFalse(client.predicted.sections.flatMap(\.rows).contains { OptimisticTable.isProvisional($0.id) })
        // Undo the delete of q (it comes back), then the edit of p: one step each, by the real ids.
        for _ in 0..<2 { _ = try client.undo() }
        XCTAssertEqual(client.predicted.values(0), ["p", "a", "b", "c", "d"])
        XCTAssertEqual(client.predicted.values(1), ["q", "x", "y"])
    }

    /// When others' changes make the batch land elsewhere than expected, each intent's part of the ack says where
    /// its rows are: as a single intent's ack would after a rebase.
    func testSharesOfARebasedBatchSayWhereTheRowsAre() throws {
        var client = OptimisticTable(confirmed: TableEngine(table: letters))
        var server = Server(engine: TableEngine(table: letters))
        let first = try XCTUnwrap(try client.submit(.edit(ref(letters, 1, 0), value: "x2")).send)
        _ = try client.submit(.move(from: ref(letters, 0, 0), to: RowPath(section: 0, row: 1)))
        _ = try client.submit(.move(from: ref(client.predicted, 0, 1), to: RowPath(section: 0, row: 2)))
        let batch = try XCTUnwrap(try answer(&client, &server, first).send)
        let other = try server.engine.resolve(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "o")))
        try server.engine.commit(other)
        try client.receive(other.batch)
        let outcome = try answer(&client, &server, batch)
        XCTAssertEqual(client.predicted.values(0), ["o", "b", "c", "a", "d", "e"])
        for id in [2, 3] {
            XCTAssertEqual(outcome.shares[id], OptimisticTable.Share(rows: [RowPath(section: 0, row: 3)]))
        }
    }

    /// A merge patch never joins a batch (it would become a reload of the value it merged to): the queue is sent
    /// up to it, then it alone, then what follows it.
    func testAPatchGoesAlone() throws {
        let checklist = Table(contents: [
            SectionContent(rows: ["a", "b", "c"].map { RowContent(value: ["title": .string($0), "done": false]) })
        ])
        var client = OptimisticTable(confirmed: TableEngine(table: checklist))
        var server = Server(engine: TableEngine(table: checklist))
        let first = try XCTUnwrap(try client.submit(.delete(ref(checklist, 0, 2))).send)
        _ = try client.submit(.edit(ref(checklist, 0, 1), value: ["title": "B", "done": false]))
        _ = try client.submit(.patch(ref(checklist, 0, 0), patch: ["done": true]))
        _ = try client.submit(.edit(ref(checklist, 0, 0), value: ["title": "A", "done": true]))
        _ = try client.submit(.move(from: ref(checklist, 0, 1), to: RowPath(section: 0, row: 0)))
        let edit = try XCTUnwrap(try answer(&client, &server, first).send)
        XCTAssertEqual(edit.intent.name, "edit")
        let patch = try XCTUnwrap(try answer(&client, &server, edit).send)
        XCTAssertEqual(patch.intent, .patch(ref(checklist, 0, 0), patch: ["done": true]))
        let rest = try XCTUnwrap(try answer(&client, &server, patch).send)
        XCTAssertEqual(rest.intent.name, "batch")
        XCTAssertEqual(try answer(&client, &server, rest).accepted, [4, 5])
        XCTAssertEqual(client.predicted.sections, server.engine.table.sections)
        XCTAssertEqual(server.engine.table.version, 4)
    }

    /// A row edited then moved cannot be both in one UIKit batch: the batch stops before the move, which goes
    /// with what follows it at the next answer.
    func testAnEditAndAMoveOfOneRowAreNotCombined() throws {
        var client = OptimisticTable(confirmed: TableEngine(table: letters))
        var server = Server(engine: TableEngine(table: letters))
        let first = try XCTUnwrap(try client.submit(.edit(ref(letters, 1, 0), value: "x2")).send)
        _ = try client.submit(.edit(ref(letters, 0, 0), value: "a2"))
        _ = try client.submit(.edit(ref(letters, 0, 1), value: "b2"))
        _ = try client.submit(.move(from: ref(client.predicted, 0, 0), to: RowPath(section: 0, row: 2)))
        _ = try client.submit(.move(from: ref(client.predicted, 0, 2), to: RowPath(section: 0, row: 3)))
        let edits = try XCTUnwrap(try answer(&client, &server, first).send)
        guard case .batch(let batch) = edits.intent else { return XCTFail("not a batch: \(edits.intent)") }
        XCTAssertEqual(batch.reloadRows.map(\.value), ["a2", "b2"])
        XCTAssertTrue(batch.moveRows.isEmpty)
        let moves = try XCTUnwrap(try answer(&client, &server, edits).send)
        XCTAssertEqual(moves.id, 4)
        XCTAssertEqual(
            moves.intent, .move(from: ref(server.engine.table, 0, 0), to: RowPath(section: 0, row: 3)))
        let outcome = try answer(&client, &server, moves)
        XCTAssertEqual(outcome.accepted, [4, 5])
        XCTAssertEqual(client.predicted.values(0), ["b2", "c", "d", "a2", "e"])
        XCTAssertEqual(client.predicted.sections, server.engine.table.sections)
    }

    /// A refused batch committed nothing: its intents are sent again one at a time, only the one that no longer
    /// applies is refused and loses its undo step, and the pending count and limit count every intent.
    func testARefusedBatchIsSentAgainOneAtATime() throws {
        var client = OptimisticTable(confirmed: TableEngine(table: letters), pendingLimit: 4)
        var server = Server(engine: TableEngine(table: letters))
        let first = try XCTUnwrap(try client.submit(.edit(ref(letters, 1, 0), value: "x2")).send)
        _ = try client.submit(.edit(ref(letters, 0, 0), value: "a2"))
        _ = try client.submit(.edit(ref(letters, 0, 1), value: "b2"))
        _ = try client.submit(.edit(ref(letters, 0, 2), value: "c2"))
        XCTAssertThrowsError(try client.submit(.edit(ref(letters, 0, 3), value: "d2")))
        let batch = try XCTUnwrap(try answer(&client, &server, first).send)
        XCTAssertEqual(client.pendingCount, 3)
        XCTAssertNil(try client.submit(.edit(ref(letters, 0, 3), value: "d2")).send)
        XCTAssertThrowsError(try client.submit(.edit(ref(letters, 0, 4), value: "e2")))
        // Someone deletes b before the batch reaches the server, which refuses it.
        let other = try server.engine.resolve(.delete(ref(letters, 0, 1)))
        try server.engine.commit(other)
        try client.receive(other.batch)
        XCTAssertEqual(client.predicted.values(0), ["a2", "c2", "d2", "e"])
        XCTAssertThrowsError(try server.serve(batch)) { error in
            let refusal = client.refuse(error as! TableError)
            XCTAssertEqual(refusal.refused, [])
            XCTAssertEqual(refusal.answered, [])
            XCTAssertEqual(refusal.send?.id, 2)
            XCTAssertEqual(refusal.send?.intent, .edit(ref(letters, 0, 0), value: "a2"))
        }
        let resent = try XCTUnwrap(client.inFlightIntent)
        let outcome = try answer(&client, &server, resent)
        XCTAssertEqual(outcome.accepted, [2])
        XCTAssertEqual(outcome.refused.map(\.id), [3])
        XCTAssertEqual(outcome.refused.first?.error.code, .conflict)
        // c2 was in the refused batch: alone; d2 was queued after it: a batch again (of one).
        let alone = try XCTUnwrap(outcome.send)
        XCTAssertEqual(alone.id, 4)
        let last = try XCTUnwrap(try answer(&client, &server, alone).send)
        XCTAssertEqual(last.id, 5)
        _ = try answer(&client, &server, last)
        XCTAssertEqual(client.predicted.sections, server.engine.table.sections)
        XCTAssertEqual(client.predicted.values(0), ["a2", "c2", "d2", "e"])
        // Undo: d2, c2, a2, x2; the refused b2 has no step.
        for _ in 0..<4 { _ = try client.undo() }
        XCTAssertEqual(client.predicted.values(0), ["a", "c", "d", "e"])
        XCTAssertEqual(client.predicted.values(1), ["x", "y"])
        XCTAssertFalse(client.canUndo)
    }
}
