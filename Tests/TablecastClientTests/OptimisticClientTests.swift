import Synchronization
import TableModel
import TablecastClient
import TablecastProtocol
import TablecastTesting
import XCTest

/// Optimistic intents and undo/redo through a real server.
final class OptimisticClientTests: XCTestCase {
    private let letters = [
        SectionContent(header: "A", rows: ["a", "b", "c", "d", "e"].map { RowContent(value: .string($0)) })
    ]

    /// The row values of each predicted table a client showed, in order.
    final class Shown: Sendable {
        let list = Mutex<[[JSONValue]]>([])
    }

    private func values(_ table: Table?) -> [JSONValue] { table?.sections[0].rows.map(\.value) ?? [] }

    private func ref(_ table: Table?, _ row: Int) -> RowRef {
        RowRef(RowPath(section: 0, row: row), id: table!.sections[0].rows[row].id)
    }

    /// Three moves, each made from the prediction the previous one left, compose: the row moves three places,
    /// for this client at once and for everyone once answered (the first alone, the two queued meanwhile as one
    /// batch: two versions, three when an answer comes between two submissions).
    func testSuccessiveMovesComposeAndEveryoneConverges() async throws {
        let (server, one, two) = try await twoClientsOnLetters()
        var pending: [PendingIntent] = []
        for step in 0..<3 {
            let move = Intent.move(from: ref(one.predicted("t"), step), to: RowPath(section: 0, row: step + 1))
            pending.append(try one.submit(move, on: "t"))
            // The prediction shows it when submit returns, before any answer.
            XCTAssertEqual(values(one.predicted("t")).firstIndex(of: "a"), step + 1)
        }
        for intent in pending { _ = try await intent.answer() }
        XCTAssertEqual(values(one.predicted("t")), ["b", "c", "d", "a", "e"])
        try await eventually { two.replica(of: "t")?.table.sections == one.predicted("t")?.sections }
        XCTAssert((2...3).contains(two.replica(of: "t")?.version ?? 0))
        XCTAssertEqual(one.pendingIntentCount("t"), 0)
        for client in [one, two] { await client.close() }
        await server.tearDown()
    }

    /// Two clients patch different fields of one row while both patches are in flight (the server holds commits
    /// back): each shows its own at once, both land, both clients converge; an undo takes back only its field.
    func testConcurrentPatchesOfDifferentFieldsBothLandAndUndoTakesBackOnlyItsField() async throws {
        let (server, one, two) = try await twoClientsOnLetters(commitDelay: .milliseconds(300))
        let row = ref(one.predicted("t"), 0)
        _ = try await one.submit(.edit(row, value: ["title": "a"]), on: "t").answer()
        try await eventually { two.replica(of: "t")?.version == 1 }
        let done = try one.submit(.patch(row, patch: ["done": true]), on: "t")
        let qty = try two.submit(.patch(row, patch: ["qty": 2]), on: "t")
        XCTAssertEqual(values(one.predicted("t")).first, ["title": "a", "done": true])
        XCTAssertEqual(values(two.predicted("t")).first, ["title": "a", "qty": 2])
        _ = try await done.answer()
        _ = try await qty.answer()
        try await eventually { one.replica(of: "t")?.version == 3 && two.replica(of: "t")?.version == 3 }
        for client in [one, two] {
            XCTAssertEqual(values(client.predicted("t")).first, ["title": "a", "done": true, "qty": 2])
        }
        _ = try await one.submitUndo("t")?.answer()
        try await eventually { two.replica(of: "t")?.version == 4 }
        XCTAssertEqual(values(two.predicted("t")).first, ["title": "a", "qty": 2])
        XCTAssertEqual(one.predicted("t")?.sections, two.replica(of: "t")?.table.sections)
        for client in [one, two] { await client.close() }
        await server.tearDown()
    }

    /// A server with table `t` holding `letters`, and two clients subscribed to it.
    private func twoClientsOnLetters(
        commitDelay: Duration = .zero, predictedByOne: Shown? = nil
    ) async throws -> (TestServer, TablecastClient, TablecastClient) {
        let server = try await TestServer(commitDelay: commitDelay)
        let one = try TablecastClient(configuration: .init(url: server.url)) { event in
            if case .predicted("t", let table) = event {
                predictedByOne?.list.withLock { $0.append(table.sections[0].rows.map(\.value)) }
            }
        }
        let two = try TablecastClient(configuration: .init(url: server.url))
        one.connect()
        two.connect()
        try await one.createTable("t", sections: letters)
        try await one.subscribe("t")
        try await two.subscribe("t")
        return (server, one, two)
    }

    /// A client subscribed to the letters table, then cut off: its server stopped (start it again to resume).
    private func offlineClientOnLetters() async throws -> (TestServer, TablecastClient) {
        let server = try await TestServer()
        let one = try TablecastClient(configuration: .init(url: server.url))
        one.connect()
        try await one.createTable("t", sections: letters)
        try await one.subscribe("t")
        await server.stop()
        try await eventually { one.connectionState != .live }
        return (server, one)
    }

    /// An intent that no longer applies to the prediction (someone else deleted its row) is refused at once
    /// with the engine's error, and nothing changes.
    func testAnIntentOnADeletedRowIsRefusedAtOnce() async throws {
        let (server, one, two) = try await twoClientsOnLetters()
        let stale = Intent.edit(ref(one.predicted("t"), 2), value: "C")
        try await two.delete("t", at: RowPath(section: 0, row: 2), id: one.predicted("t")!.sections[0].rows[2].id)
        try await eventually { one.replica(of: "t")?.version == 1 }
        do {
            try await one.perform(stale, on: "t")
            XCTFail("the edit of a deleted row was accepted")
        } catch let error as TableError {
            XCTAssertEqual(error.code, .conflict)
        }
        XCTAssertEqual(values(one.predicted("t")), ["a", "b", "d", "e"])
        XCTAssertEqual(one.pendingIntentCount("t"), 0)
        XCTAssertFalse(one.canUndo("t"))
        for client in [one, two] { await client.close() }
        await server.tearDown()
    }

    /// An intent the client could predict but the server refuses (another client's delete of its row was still
    /// being committed, so this client had not seen it): the refusal comes over the wire, the prediction springs
    /// back, and once the delete arrives this client shows what everyone does.
    func testAnIntentTheServerRefusesSpringsBackAndTheClientConverges() async throws {
        let shown = Shown()
        let (server, one, two) = try await twoClientsOnLetters(commitDelay: .milliseconds(500), predictedByOne: shown)
        let row = ref(one.predicted("t"), 2)
        let deleting = Task { try await two.delete("t", at: row.path, id: row.id) }
        // Once a later request on the same connection is answered, the server has read the delete; its commit is
        // held back for 0.5 s, so this client has not heard of it when it edits the row.
        try await eventually("the delete is sent") { two.pendingRequestCount == 1 }
        _ = try await two.listTables()
        XCTAssertEqual(one.replica(of: "t")?.version, 0)
        let before = shown.list.withLock { $0.count }
        let edit = try one.submit(.edit(row, value: "C"), on: "t")
        do {
            _ = try await edit.answer()
            XCTFail("the server accepted an edit of a row it had deleted")
        } catch let error as ProtocolError {
            // The server's own error (a refusal by this client's engine would be a TableError).
            XCTAssertEqual(error.code, .conflict)
        }
        XCTAssertEqual(one.pendingIntentCount("t"), 0)
        // The predictions in the order they were shown (the refusal may come back before this test looks; other
        // news, presence say, may show the same table again in between).
        let since = shown.list.withLock { Array($0.dropFirst(before)) }
        let edited = try XCTUnwrap(
            since.firstIndex(of: ["a", "b", "C", "d", "e"]), "shown before any answer: \(since)")
        XCTAssertEqual(since.dropFirst(edited + 1).first, ["a", "b", "c", "d", "e"], "then taken back: \(since)")
        XCTAssertEqual(
            one.predicted("t")?.sections, one.replica(of: "t")?.table.sections, "nothing of the edit is shown")
        _ = try await deleting.value
        try await eventually { one.replica(of: "t")?.version == 1 }
        XCTAssertEqual(values(one.predicted("t")), ["a", "b", "d", "e"])
        XCTAssertFalse(one.canUndo("t"))
        for client in [one, two] { await client.close() }
        await server.tearDown()
    }

    /// Intents made while the connection is down are shown, kept, and sent after the resume.
    func testOfflineIntentsAreSentAfterTheResume() async throws {
        let (server, one) = try await offlineClientOnLetters()
        let delete = Intent.delete(ref(one.predicted("t"), 0))
        let first = Task { try await one.perform(delete, on: "t") }
        try await eventually { self.values(one.predicted("t")) == ["b", "c", "d", "e"] }
        let second = Task {
            try await one.perform(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "z")), on: "t")
        }
        try await eventually { self.values(one.predicted("t")) == ["z", "b", "c", "d", "e"] }
        XCTAssertEqual(one.pendingIntentCount("t"), 2)
        try await server.start()
        _ = try await first.value
        _ = try await second.value
        let fresh = try await server.snapshot("t")
        XCTAssertEqual(fresh.table.sections, one.predicted("t")?.sections)
        XCTAssertEqual(values(fresh.table), ["z", "b", "c", "d", "e"])
        await one.close()
        await server.tearDown()
    }

    /// While the store cannot commit (its PostgreSQL stopped), an optimistic intent is refused as `unavailable`
    /// again and again, still shown, and lands once the store is back. (That the delays between its retries
    /// double up to the backoff's maximum is tested on the state machine.)
    func testAnIntentRefusedAsUnavailableIsRetriedUntilItLands() async throws {
        let cluster = try PostgresCluster()
        defer { try? cluster.stop() }
        let server = try await TestServer(database: try cluster.createDatabase(prefix: "patient"))
        let one = try TablecastClient(
            configuration: .init(
                url: server.url, clientID: "patient", backoff: Backoff(initial: .milliseconds(20), maximum: .seconds(1))
            ))
        one.connect()
        try await one.createTable("t", sections: letters)
        try await one.subscribe("t")
        try cluster.kill()
        let pending = try one.submit(.edit(ref(one.predicted("t"), 0), value: "A"), on: "t")
        try await eventually("refused and retried") {
            try await server.metric(#"tablecast_intents_total{outcome="unavailable"}"#) >= 3
        }
        XCTAssertEqual(values(one.predicted("t")), ["A", "b", "c", "d", "e"], "still shown while it waits")
        try cluster.restart()
        let ack = try await pending.answer()
        XCTAssertNotNil(ack)
        let fresh = try await server.snapshot("t")
        XCTAssertEqual(values(fresh.table), ["A", "b", "c", "d", "e"])
        await one.close()
        await server.tearDown()
    }

    /// Unsubscribing answers the table's pending optimistic intents with an error instead of leaving them waiting.
    func testUnsubscribingFailsPendingIntents() async throws {
        let (server, one) = try await offlineClientOnLetters()
        let pending = try one.submit(.delete(ref(one.predicted("t"), 0)), on: "t")
        let unsubscribe = Task { try await one.unsubscribe("t") }
        do {
            _ = try await pending.answer()
            XCTFail("answered after unsubscribing")
        } catch let error as ProtocolError {
            XCTAssertEqual(error.code, .noSuchTable)
        }
        try await server.start()
        try await unsubscribe.value
        await one.close()
        await server.tearDown()
    }

    /// Undo and redo go through the server like any intent; an undo whose row someone else deleted cannot be
    /// undone, says so, and touches nothing.
    func testUndoRedoOverTheWire() async throws {
        let (server, one, two) = try await twoClientsOnLetters()
        try await one.perform(.delete(ref(one.predicted("t"), 1)), on: "t")
        try await one.perform(.edit(ref(one.predicted("t"), 0), value: "A"), on: "t")
        var done = try await one.undo("t") // the edit
        XCTAssertTrue(done)
        done = try await one.undo("t") // the delete: b comes back after a
        XCTAssertTrue(done)
        try await eventually { two.replica(of: "t")?.version == 4 }
        XCTAssertEqual(values(two.replica(of: "t")?.table), ["a", "b", "c", "d", "e"])
        done = try await one.redo("t") // deletes b again
        XCTAssertTrue(done)
        try await eventually { two.replica(of: "t")?.version == 5 }
        XCTAssertEqual(values(two.replica(of: "t")?.table), ["a", "c", "d", "e"])
        // Someone else deletes the row the remaining redo (the edit of a) would change.
        try await two.delete(
            "t", at: RowPath(section: 0, row: 0), id: two.replica(of: "t")!.table.sections[0].rows[0].id)
        try await eventually { one.replica(of: "t")?.version == 6 }
        do {
            try await one.redo("t")
            XCTFail("redid an edit of a deleted row")
        } catch let error as TableError {
            XCTAssertEqual(error.code, .conflict)
            XCTAssertTrue(error.message.contains("cannot redo"), error.message)
        }
        XCTAssertEqual(values(one.predicted("t")), ["c", "d", "e"])
        done = try await one.undo("t") // undoes the redo: b back again, first now that a is gone
        XCTAssertTrue(done)
        XCTAssertEqual(values(one.predicted("t")), ["b", "c", "d", "e"])
        for client in [one, two] { await client.close() }
        await server.tearDown()
    }
}
