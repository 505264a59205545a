import Foundation
import TableModel
import TablecastProtocol
import XCTest

/// The shared test vectors of optimistic edits, web-client-protocol/vectors/optimistic/*.json: scenarios played
/// through ``OptimisticTable`` (the engine's own rebase) against a server engine, recording after every step
/// what the client sends and the predicted table it shows. The JS client replays them (`node --test`).
///
/// This test regenerates every file and fails when a committed one differs; run it with
/// `TABLECAST_WRITE_VECTORS=1` to write them after an intended change.
final class OptimisticVectorTests: XCTestCase {
    func testCommittedVectorsMatchTheEngine() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("web-client-protocol/vectors/optimistic")
        let write = ProcessInfo.processInfo.environment["TABLECAST_WRITE_VECTORS"] == "1"
        if write { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        for vector in try Self.scenarios() {
            let url = directory.appendingPathComponent("\(vector.name).json")
            let generated = vector.text
            if write {
                try generated.write(to: url, atomically: true, encoding: .utf8)
            } else {
                let committed = try? String(contentsOf: url, encoding: .utf8)
                XCTAssertEqual(
                    committed, generated,
                    "\(vector.name).json differs from what the engine generates; rerun with TABLECAST_WRITE_VECTORS=1")
            }
        }
    }

    static let letters = Table(contents: [
        SectionContent(header: "A", rows: ["a", "b", "c", "d", "e"].map { RowContent(value: .string($0)) }),
        SectionContent(header: "B", rows: ["x", "y"].map { RowContent(value: .string($0)) }),
    ])

    static func ref(_ table: Table, _ section: Int, _ row: Int) -> RowRef {
        RowRef(RowPath(section: section, row: row), id: table.sections[section].rows[row].id)
    }

    static func scenarios() throws -> [Recorder] {
        var vectors: [Recorder] = []

        var jjj = Recorder(
            "moves-compose", "J J J: three moves down made before the server answers move the row three places", letters
        )
        for step in 0..<3 {
            try jjj.submit(.move(from: ref(jjj.client.predicted, 0, step), to: RowPath(section: 0, row: step + 1)))
        }
        try jjj.settle()
        vectors.append(jjj)

        var burst = Recorder(
            "delete-insert-burst", "delete then insert into the gap, then edit the provisional row, in one burst",
            letters)
        try burst.submit(.delete(ref(letters, 0, 1)))
        try burst.submit(.insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "new")))
        try burst.submit(.edit(ref(burst.client.predicted, 0, 1), value: "newer"))
        try burst.settle()
        vectors.append(burst)

        var others = Recorder(
            "rebase-in-flight", "others' commits arrive while a delete is in flight and an insert is queued", letters)
        try others.submit(.delete(ref(letters, 0, 2)))
        try others.submit(.insert(at: RowPath(section: 0, row: 2), row: RowContent(value: "c2")))
        try others.other(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "first")))
        try others.other(.move(from: ref(others.server.table, 0, 2), to: RowPath(section: 1, row: 0))) // b
        try others.deliver()
        try others.deliver()
        try others.settle()
        vectors.append(others)

        var multi = Recorder(
            "multi-delete-in-flight",
            "a batch of deletes in flight while others delete one of the same rows and insert before them", letters)
        try multi.submit(.batch(ClientBatch(deleteRows: [ref(letters, 0, 1), ref(letters, 0, 3), ref(letters, 1, 0)])))
        try multi.other(.delete(ref(letters, 0, 3)))
        try multi.other(.insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "new")))
        try multi.deliver()
        try multi.deliver()
        try multi.settle()
        vectors.append(multi)

        var gap = Recorder(
            "same-gap-in-flight",
            "an insert in flight into a gap others fill meanwhile (an insert, a move in) and leave (a move out): what they put there stays before it",
            letters)
        try gap.submit(.insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "mine")))
        try gap.other(.insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "o1")))
        try gap.other(.move(from: ref(gap.server.table, 0, 4), to: RowPath(section: 0, row: 1))) // d
        try gap.other(.move(from: ref(gap.server.table, 0, 3), to: RowPath(section: 0, row: 5))) // b
        try gap.deliver()
        try gap.deliver()
        try gap.deliver()
        try gap.settle()
        vectors.append(gap)

        let shelves = Table(contents: ["A", "B", "C", "D", "E"].map { SectionContent(header: $0) })
        func shelf(_ table: Table, _ index: Int) -> SectionRef { SectionRef(index, id: table.sections[index].id) }
        var sectionGap = Recorder(
            "same-section-gap-in-flight",
            "a section inserted in flight into a gap others fill meanwhile (an insert, a move in) and leave (a move out): what they put there stays before it",
            shelves)
        try sectionGap.submit(.insertSection(at: 1, section: SectionContent(header: "mine")))
        try sectionGap.other(.insertSection(at: 1, section: SectionContent(header: "o1")))
        try sectionGap.other(.moveSection(from: shelf(sectionGap.server.table, 4), to: 1)) // D
        try sectionGap.other(.moveSection(from: shelf(sectionGap.server.table, 3), to: 5)) // B
        try sectionGap.deliver()
        try sectionGap.deliver()
        try sectionGap.deliver()
        try sectionGap.settle()
        vectors.append(sectionGap)

        var limited = letters
        limited.rules.maxRowsPerSection = 6
        var refused = Recorder(
            "refused", "an insert refused by the limit springs back; the queued edit of its row is refused too", limited
        )
        try refused.submit(.insert(at: RowPath(section: 0, row: 5), row: RowContent(value: "f")))
        try refused.submit(.edit(ref(refused.client.predicted, 0, 5), value: "f2"))
        try refused.other(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "other")))
        try refused.settle()
        vectors.append(refused)

        var undo = Recorder(
            "undo-redo",
            "delete, undo (the row comes back after its nearest predecessor still there), redo; an edit whose row is gone cannot be undone",
            letters)
        try undo.submit(.delete(ref(letters, 0, 2)))
        try undo.submit(.edit(ref(undo.client.predicted, 0, 3), value: "E"))
        try undo.settle()
        try undo.other(.move(from: ref(undo.server.table, 0, 1), to: RowPath(section: 1, row: 0)))
        try undo.other(.delete(ref(undo.server.table, 0, 2)))
        try undo.settle()
        try undo.undo()
        try undo.undo()
        try undo.settle()
        try undo.redo()
        try undo.settle()
        vectors.append(undo)

        let checklist = Table(contents: [
            SectionContent(rows: [
                RowContent(value: ["title": "Yogurt", "done": false, "qty": 1]),
                RowContent(value: ["title": "Milk", "done": false]),
            ])
        ])
        var patches = Recorder(
            "concurrent-patches",
            "patches of one row in flight and queued while another client patches other fields of it: every field change stays; undo restores only the fields each patch named",
            checklist)
        try patches.submit(.patch(ref(checklist, 0, 0), patch: ["done": true]))
        try patches.submit(.patch(ref(checklist, 0, 0), patch: ["qty": 2, "note": "greek"]))
        try patches.other(.patch(ref(checklist, 0, 0), patch: ["title": "Skyr", "qty": 3]))
        try patches.deliver()
        try patches.settle()
        try patches.other(.patch(ref(checklist, 0, 0), patch: ["title": "Greek skyr"]))
        try patches.settle()
        try patches.undo()
        try patches.undo()
        try patches.settle()
        try patches.redo()
        try patches.settle()
        vectors.append(patches)

        var patchBatch = Recorder(
            "patch-refused",
            "a batch of patches, then a patch in flight of a row another client deletes meanwhile: refused, it springs back",
            checklist)
        try patchBatch.submit(
            .batch(
                ClientBatch(patchRows: [
                    .init(row: ref(checklist, 0, 0), patch: ["done": true]),
                    .init(row: ref(checklist, 0, 1), patch: ["done": true, "tags": ["cold": true]]),
                ])))
        try patchBatch.settle()
        try patchBatch.submit(.patch(ref(patchBatch.client.predicted, 0, 1), patch: ["tags": ["cold": nil]]))
        try patchBatch.other(.delete(ref(patchBatch.server.table, 0, 1)))
        try patchBatch.settle()
        vectors.append(patchBatch)
        try vectors += queueScenarios()
        return vectors
    }

    /// What is queued while a request is in flight goes as one batch when the answer comes.
    static func queueScenarios() throws -> [Recorder] {
        var vectors: [Recorder] = []
        let list = Table(contents: [SectionContent(rows: (0..<12).map { RowContent(value: .string("item \($0)")) })])
        var tenJ = Recorder(
            "queue-as-batch",
            "J ten times: the first move goes alone, the nine queued meanwhile go as one request when it is acked",
            list)
        for step in 0..<10 {
            try tenJ.submit(.move(from: ref(tenJ.client.predicted, 0, step), to: RowPath(section: 0, row: step + 1)))
        }
        try tenJ.settle()
        vectors.append(tenJ)

        var mixed = Recorder(
            "queue-batch-mixed",
            "insert, edit the provisional row, delete, move, edit a section: queued behind an edit, sent as one batch",
            letters)
        try mixed.submit(.edit(ref(letters, 0, 0), value: "A"))
        try mixed.submit(.insert(at: RowPath(section: 1, row: 1), row: RowContent(value: "n")))
        try mixed.submit(.edit(ref(mixed.client.predicted, 1, 1), value: "n2"))
        try mixed.submit(.delete(ref(mixed.client.predicted, 0, 1)))
        try mixed.submit(.move(from: ref(mixed.client.predicted, 0, 3), to: RowPath(section: 1, row: 0)))
        try mixed.submit(.editSection(SectionRef(1, id: letters.sections[1].id), header: .some("BB")))
        try mixed.settle()
        vectors.append(mixed)

        var rebased = Recorder(
            "queue-batch-rebased",
            "a queued burst sent as one batch while others insert before it and delete a row it moves past: the server rebases the batch and the prediction agrees",
            letters)
        try rebased.submit(.edit(ref(letters, 1, 0), value: "x2"))
        try rebased.submit(.move(from: ref(letters, 0, 0), to: RowPath(section: 0, row: 1)))
        try rebased.submit(.move(from: ref(rebased.client.predicted, 0, 1), to: RowPath(section: 0, row: 2)))
        try rebased.submit(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "mine")))
        rebased.serve()
        try rebased.deliver()
        try rebased.deliver()
        try rebased.other(.insert(at: RowPath(section: 0, row: 0), row: RowContent(value: "theirs")))
        try rebased.other(.delete(ref(rebased.server.table, 0, 2)))
        try rebased.deliver()
        try rebased.deliver()
        try rebased.settle()
        vectors.append(rebased)

        var split = Recorder(
            "queue-batch-refused",
            "a batch refused because others deleted the row one of its edits names: its intents are sent again one at a time, so only that edit is refused",
            letters)
        try split.submit(.edit(ref(letters, 1, 1), value: "y2"))
        try split.submit(.edit(ref(letters, 0, 0), value: "a2"))
        try split.submit(.edit(ref(letters, 0, 1), value: "b2"))
        try split.submit(.insert(at: RowPath(section: 0, row: 5), row: RowContent(value: "f")))
        split.serve()
        try split.deliver()
        try split.deliver()
        try split.other(.delete(ref(split.server.table, 0, 1)))
        try split.settle()
        vectors.append(split)

        let checklist = Table(contents: [
            SectionContent(
                rows: ["Yogurt", "Milk", "Eggs"].map { RowContent(value: ["title": .string($0), "done": false]) })
        ])
        var patched = Recorder(
            "queue-batch-patch",
            "a patch queued among edits goes alone (as a batch it would become the merged value and overwrite what others patch meanwhile); the edits around it go as batches",
            checklist)
        try patched.submit(.edit(ref(checklist, 0, 2), value: ["title": "Eggs", "done": true]))
        try patched.submit(.edit(ref(checklist, 0, 1), value: ["title": "Oat milk", "done": false]))
        try patched.submit(.patch(ref(checklist, 0, 0), patch: ["done": true]))
        try patched.submit(.move(from: ref(checklist, 0, 2), to: RowPath(section: 0, row: 0)))
        try patched.submit(.delete(ref(patched.client.predicted, 0, 2)))
        try patched.settle()
        vectors.append(patched)
        return vectors
    }
}

/// Plays one scenario: one observed client, a server engine, and others who commit straight to the server.
struct Recorder {
    let name: String
    let description: String
    let table: Table
    var server: TableEngine
    var client: OptimisticTable
    private var request: OptimisticTable.Outgoing?
    private var inbox: [JSONValue] = []
    private var steps: [JSONValue] = []

    init(_ name: String, _ description: String, _ table: Table) {
        self.name = name
        self.description = description
        self.table = table
        server = TableEngine(table: table)
        client = OptimisticTable(confirmed: TableEngine(table: table))
    }

    /// The wire form of an intent: its `type` and members, without `table` and `ref`.
    static func wire(_ intent: Intent, base: UInt64?) -> JSONValue {
        guard case .object(var members) = ClientMessage(.intent(table: "t", base: base, intent)).json else {
            return .null
        }
        members["table"] = nil
        return .object(members)
    }

    private func sent(_ outgoing: OptimisticTable.Outgoing?) -> JSONValue {
        outgoing.map { .object(["id": .number(Double($0.id)), "intent": Self.wire($0.intent, base: $0.base)]) } ?? .null
    }

    private mutating func record(_ members: [String: JSONValue]) {
        var members = members
        members["predicted"] = client.predicted.json
        members["pending"] = .number(Double(client.pendingCount))
        steps.append(.object(members))
    }

    private mutating func track(_ outgoing: OptimisticTable.Outgoing?) {
        if let outgoing { request = outgoing }
    }

    /// The client submits `intent`, made against its predicted table.
    mutating func submit(_ intent: Intent) throws {
        let submission = try client.submit(intent)
        track(submission.send)
        record([
            "step": "submit", "intent": Self.wire(intent, base: nil), "id": .number(Double(submission.id)),
            "send": sent(submission.send),
        ])
    }

    mutating func undo() throws { try step("undo") }
    mutating func redo() throws { try step("redo") }

    private mutating func step(_ kind: String) throws {
        do throws(TableError) {
            let submission = kind == "undo" ? try client.undo() : try client.redo()
            track(submission?.send)
            record([
                "step": .string(kind), "id": submission.map { .number(Double($0.id)) } ?? .null,
                "send": sent(submission?.send),
            ])
        } catch {
            record([
                "step": .string(kind),
                "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)]),
            ])
        }
    }

    /// Someone else commits `intent` at the server's current version; the update waits in the client's inbox.
    mutating func other(_ intent: Intent) throws {
        let resolution = try server.resolve(intent)
        try server.commit(resolution)
        inbox.append(.object(["update": resolution.batch.json]))
    }

    /// The server answers the client's request: its update then its ack, or an error.
    mutating func serve() {
        guard let outgoing = request else { return }
        request = nil
        do {
            let resolution = try server.resolve(outgoing.intent, base: outgoing.base)
            try server.commit(resolution)
            if !resolution.isNoop { inbox.append(.object(["update": resolution.batch.json, "own": true])) }
            inbox.append(.object(["ack": .object(["created": .array(resolution.createdIDs.map(JSONValue.string))])]))
        } catch {
            inbox.append(
                .object(["error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)])]))
        }
    }

    /// Delivers the client's next message.
    mutating func deliver() throws {
        guard case .object(let message) = inbox.removeFirst() else { return }
        if let batch = message["update"] {
            let own = message["own"] == .bool(true)
            try client.receive(try Batch(json: batch), own: own)
            record(["step": "update", "batch": batch, "own": .bool(own)])
            return
        }
        let outcome: OptimisticTable.Outcome
        var members: [String: JSONValue]
        if case .object(let ack)? = message["ack"], case .array(let created)? = ack["created"] {
            outcome = client.acknowledge(
                created: created.compactMap { if case .string(let id) = $0 { id } else { nil } })
            members = ["step": "ack", "created": .array(created)]
            // Each intent's part of the ack of a batch of queued intents, as `{created, resolved}`.
            members["shares"] = .object(
                Dictionary(
                    uniqueKeysWithValues: outcome.shares.map { id, share in
                        (
                            String(id),
                            JSONValue.object([
                                "created": .array(share.created.map(JSONValue.string)),
                                "resolved": .array(share.sections.map { .number(Double($0)) } + share.rows.map(\.json)),
                            ])
                        )
                    }))
        } else {
            guard case .object(let error)? = message["error"], case .string(let code)? = error["code"],
                case .string(let text)? = error["message"]
            else { return }
            outcome = client.refuse(TableError(TableError.Code(rawValue: code)!, at: nil, text))
            members = ["step": "error", "error": message["error"]!]
        }
        track(outcome.send)
        members["send"] = sent(outcome.send)
        members["accepted"] = .array(outcome.accepted.map { .number(Double($0)) })
        members["refused"] = .array(
            outcome.refused.map {
                .object([
                    "id": .number(Double($0.id)), "code": .string($0.error.code.rawValue),
                    "message": .string($0.error.message),
                ])
            })
        record(members)
    }

    /// Serves and delivers until nothing is pending.
    mutating func settle() throws {
        while request != nil || !inbox.isEmpty {
            if inbox.isEmpty { serve() } else { try deliver() }
        }
    }

    /// The file: one step per line, so that diffs read well.
    var text: String {
        let head: JSONValue = .object(["name": .string(name), "description": .string(description), "table": table.json])
        var text = String(decoding: head.jsonBytes, as: UTF8.self)
        text.removeLast()
        text += ",\"steps\":[\n"
        text += steps.map { String(decoding: $0.jsonBytes, as: UTF8.self) }.joined(separator: ",\n")
        text += "\n]}\n"
        return text
    }
}
