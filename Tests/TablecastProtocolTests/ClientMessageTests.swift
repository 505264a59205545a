import TableModel
import TablecastProtocol
import XCTest

final class ClientMessageTests: XCTestCase {
    private func decode(_ text: String, limits: ProtocolLimits = ProtocolLimits()) throws -> ClientMessage {
        try ClientMessage.decode(Array(text.utf8), limits: limits)
    }

    private func assertRefused(
        _ text: String, _ code: ProtocolError.Code, _ message: String, ref: String? = nil, at: String? = nil,
        limits: ProtocolLimits = ProtocolLimits(), file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try decode(text, limits: limits), file: file, line: line) { error in
            guard let error = error as? ProtocolError else {
                return XCTFail("not a ProtocolError: \(error)", file: file, line: line)
            }
            XCTAssertEqual(error.code, code, file: file, line: line)
            XCTAssertEqual(error.message, message, file: file, line: line)
            XCTAssertEqual(error.ref, ref, file: file, line: line)
            if let at { XCTAssertEqual(error.at, at, file: file, line: line) }
        }
    }

    func testSessionAndTableMessages() throws {
        XCTAssertEqual(
            try decode(#"{"type":"hello","client":"c1","name":"Ana","token":"t","ref":"h"}"#),
            ClientMessage(ref: "h", .hello(client: "c1", name: "Ana", token: "t")))
        XCTAssertEqual(try decode(#"{"type":"hello","client":"c1"}"#).body, .hello(client: "c1", name: nil, token: nil))
        XCTAssertEqual(
            try decode(
                #"{"type":"createTable","table":"groceries","sections":[{"header":"Fruit","rows":[{"value":"fig"}]}],"rules":{"moves":"withinSection"}}"#
            ).body,
            .createTable(
                table: "groceries",
                sections: [SectionContent(header: "Fruit", rows: [RowContent(value: "fig")])],
                rules: RulesPatch(moves: .withinSection)))
        XCTAssertEqual(try decode(#"{"type":"dropTable","table":"t"}"#).body, .dropTable(table: "t"))
        XCTAssertEqual(
            try decode(#"{"type":"setRules","table":"t","rules":{"reserveLastRow":true,"maxValueBytes":10}}"#).body,
            .setRules(table: "t", rules: RulesPatch(reserveLastRow: true, maxValueBytes: 10)))
        XCTAssertEqual(try decode(#"{"type":"listTables"}"#).body, .listTables)
        XCTAssertEqual(
            try decode(#"{"type":"subscribe","table":"t","since":41,"epoch":"e"}"#).body,
            .subscribe(table: "t", since: 41, epoch: "e"))
        XCTAssertEqual(
            try decode(#"{"type":"refresh","table":"t"}"#).body, .refresh(table: "t", since: nil, epoch: nil))
        XCTAssertEqual(try decode(#"{"type":"unsubscribe","table":"t"}"#).body, .unsubscribe(table: "t"))
        XCTAssertEqual(try decode(#"{"type":"editing","table":"t","on":true}"#).body, .editing(table: "t", on: true))
        XCTAssertEqual(
            try decode(#"{"type":"beginEditingRow","table":"t","row":"r1"}"#).body,
            .beginEditingRow(table: "t", row: "r1"))
        XCTAssertEqual(
            try decode(#"{"type":"endEditingRow","table":"t","row":"r1"}"#).body, .endEditingRow(table: "t", row: "r1"))
    }

    func testSingleIntents() throws {
        func intent(_ text: String) throws -> Intent? {
            guard case .intent(let table, _, let intent) = try decode(text).body, table == "t" else { return nil }
            return intent
        }
        XCTAssertEqual(
            try intent(#"{"type":"insert","table":"t","at":[0,2],"value":{"n":1},"movable":false}"#),
            .insert(at: RowPath(section: 0, row: 2), row: RowContent(value: ["n": 1], movable: false)))
        XCTAssertEqual(
            try intent(#"{"type":"delete","table":"t","at":[1,0],"row":"r9"}"#),
            .delete(RowRef(RowPath(section: 1, row: 0), id: "r9")))
        XCTAssertEqual(
            try intent(#"{"type":"move","table":"t","from":[0,0],"to":[1,3]}"#),
            .move(from: RowRef(RowPath(section: 0, row: 0)), to: RowPath(section: 1, row: 3)))
        XCTAssertEqual(
            try intent(#"{"type":"edit","table":"t","at":[0,1],"value":null,"row":"r2"}"#),
            .edit(RowRef(RowPath(section: 0, row: 1), id: "r2"), value: .null))
        XCTAssertEqual(
            try intent(#"{"type":"insertSection","table":"t","at":1,"header":"H","rows":[{"value":1}]}"#),
            .insertSection(at: 1, section: SectionContent(header: "H", rows: [RowContent(value: 1)])))
        XCTAssertEqual(
            try intent(#"{"type":"deleteSection","table":"t","at":2,"section":"s4"}"#),
            .deleteSection(SectionRef(2, id: "s4")))
        XCTAssertEqual(
            try intent(#"{"type":"moveSection","table":"t","from":0,"to":2}"#), .moveSection(from: SectionRef(0), to: 2)
        )
        // Absent keeps, null clears.
        XCTAssertEqual(
            try intent(#"{"type":"editSection","table":"t","at":0,"footer":null}"#),
            .editSection(SectionRef(0), header: nil, footer: .some(nil)))
        XCTAssertEqual(
            try intent(#"{"type":"patch","table":"t","at":[0,1],"patch":{"done":true,"note":null},"row":"r2"}"#),
            .patch(RowRef(RowPath(section: 0, row: 1), id: "r2"), patch: ["done": true, "note": nil]))
        XCTAssertEqual(
            try intent(#"{"type":"batch","table":"t","patchRows":[{"at":[0,1],"patch":"whole"}]}"#),
            .batch(ClientBatch(patchRows: [.init(row: RowRef(RowPath(section: 0, row: 1)), patch: "whole")])))
        assertRefused(
            #"{"type":"patch","table":"t","at":[0,1]}"#, .badRequest, "patch.patch: missing", at: "patch.patch")
        assertRefused(
            #"{"type":"batch","table":"t","patchRows":[{"at":[0,1],"value":{}}]}"#, .badRequest,
            "patchRows[0].value: unknown field", at: "patchRows[0].value")
        guard case .intent(_, let base, _) = try decode(#"{"type":"delete","table":"t","at":[0,0],"base":7}"#).body
        else {
            return XCTFail("not an intent")
        }
        XCTAssertEqual(base, 7)
    }

    func testBatchWithAllEightLists() throws {
        let text = #"""
            {"type":"batch","table":"states","base":7,"ref":"b1",
             "deleteSections":[{"at":2,"section":"s9"}],
             "insertSections":[{"at":0,"header":"New","footer":null,"rows":[{"value":"x"}]}],
             "reloadSections":[{"at":1,"header":"Renamed"}],
             "moveSections":[{"from":0,"to":3}],
             "deleteRows":[{"at":[1,4],"row":"r17"}],
             "insertRows":[{"at":[1,0],"value":"Alaska"}],
             "reloadRows":[{"at":[1,2],"value":"Delaware!","row":"r12","editable":false}],
             "moveRows":[{"from":[1,3],"to":[1,0],"row":"r15"}]}
            """#
        let expected = ClientBatch(
            deleteSections: [SectionRef(2, id: "s9")],
            insertSections: [.init(at: 0, section: SectionContent(header: "New", rows: [RowContent(value: "x")]))],
            reloadSections: [.init(section: SectionRef(1), header: .some("Renamed"), footer: nil)],
            moveSections: [.init(from: SectionRef(0), to: 3)],
            deleteRows: [RowRef(RowPath(section: 1, row: 4), id: "r17")],
            insertRows: [.init(at: RowPath(section: 1, row: 0), row: RowContent(value: "Alaska"))],
            reloadRows: [
                .init(row: RowRef(RowPath(section: 1, row: 2), id: "r12"), value: "Delaware!", editable: false)
            ],
            moveRows: [.init(from: RowRef(RowPath(section: 1, row: 3), id: "r15"), to: RowPath(section: 1, row: 0))])
        XCTAssertEqual(
            try decode(text), ClientMessage(ref: "b1", .intent(table: "states", base: 7, .batch(expected))))
        XCTAssertEqual(
            try decode(#"{"type":"batch","table":"t"}"#).body, .intent(table: "t", base: nil, .batch(ClientBatch())))
    }

    func testMalformedJSONAndEnvelope() {
        assertRefused("{not json", .badRequest, "invalid JSON at byte 1: expected a string key in an object")
        assertRefused("[1,2]", .badRequest, "a message must be a JSON object")
        assertRefused(#"{"ref":"a"}"#, .badRequest, "missing field 'type'", ref: "a")
        assertRefused(#"{"type":5,"ref":"a"}"#, .badRequest, "field 'type' must be a string", ref: "a")
        assertRefused(#"{"type":"teleport","ref":"u"}"#, .unknownType, "unknown message type 'teleport'", ref: "u")
        assertRefused(#"{"type":"listTables","ref":7}"#, .badRequest, "field 'ref' must be a string")
        assertRefused(
            #"{"type":"listTables","ref":"\#(String(repeating: "x", count: 65))"}"#, .badRequest,
            "field 'ref' must be at most 64 characters")
    }

    func testHistoryRequests() throws {
        XCTAssertEqual(
            try decode(#"{"type":"history","table":"t","from":3,"to":40,"limit":20,"order":"oldest","ref":"q"}"#),
            ClientMessage(ref: "q", .history(table: "t", from: 3, to: 40, limit: 20, newestFirst: false)))
        XCTAssertEqual(
            try decode(#"{"type":"history","table":"t"}"#).body,
            .history(table: "t", from: nil, to: nil, limit: nil, newestFirst: true))
        XCTAssertEqual(
            try decode(#"{"type":"snapshotAt","table":"t","version":7}"#).body, .snapshotAt(table: "t", version: 7))
        assertRefused(#"{"type":"history","table":"t","limit":0}"#, .badRequest, "history.limit: expected 1 to 1000")
        assertRefused(#"{"type":"history","table":"t","limit":1001}"#, .badRequest, "history.limit: expected 1 to 1000")
        assertRefused(
            #"{"type":"history","table":"t","order":"up"}"#, .badRequest,
            #"history.order: expected "newest" or "oldest""#)
        assertRefused(
            #"{"type":"history","table":"t","from":-1}"#, .badRequest,
            "history.from: expected a non-negative integer, got a number")
        assertRefused(#"{"type":"snapshotAt","table":"t"}"#, .badRequest, "snapshotAt.version: missing")
    }

    func testWrongAndMissingFieldsNameTheField() {
        assertRefused(
            #"{"type":"insert","table":"t","at":"zero","value":1,"ref":"w"}"#, .badRequest,
            "insert.at: expected an index path [section, row], got a string", ref: "w", at: "insert.at")
        assertRefused(#"{"type":"insert","table":"t","at":[0,0]}"#, .badRequest, "insert.value: missing")
        assertRefused(
            #"{"type":"insert","table":"t","at":[0,-1],"value":1}"#, .badRequest,
            "insert.at[1]: expected a non-negative integer, got a number")
        assertRefused(
            #"{"type":"insert","table":"t","at":[0,1.5],"value":1}"#, .badRequest,
            "insert.at[1]: expected a non-negative integer, got a number")
        assertRefused(
            #"{"type":"moveSection","table":"t","from":0,"to":"1"}"#, .badRequest,
            "moveSection.to: expected a non-negative integer, got a string")
        assertRefused(
            #"{"type":"editing","table":"t","on":"yes"}"#, .badRequest, "editing.on: expected a boolean, got a string")
        assertRefused(
            #"{"type":"delete","table":"t","at":[0,0],"base":-3}"#, .badRequest,
            "delete.base: expected a non-negative integer, got a number")
        assertRefused(
            #"{"type":"batch","table":"t","deleteRows":[{"at":[0]}]}"#, .badRequest,
            "deleteRows[0].at: expected an index path [section, row], got an array", at: "deleteRows[0].at")
        assertRefused(
            #"{"type":"batch","table":"t","insertSections":[{"at":0,"rows":[{}]}]}"#, .badRequest,
            "insertSections[0].rows[0].value: missing")
        assertRefused(
            #"{"type":"batch","table":"t","moveRows":{}}"#, .badRequest,
            "batch.moveRows: expected an array, got an object")
        assertRefused(
            #"{"type":"editSection","table":"t","at":0,"header":3}"#, .badRequest,
            "editSection.header: expected a string or null, got a number")
        assertRefused(#"{"type":"hello","client":""}"#, .badRequest, "hello.client: expected 1 to 64 characters")
    }

    /// One valid message of every client type: adding any member the type does not have must be refused.
    static let validMessages: [String: String] = [
        "hello": #"{"type":"hello","client":"c1"}"#,
        "createTable": #"{"type":"createTable","table":"t"}"#,
        "dropTable": #"{"type":"dropTable","table":"t"}"#,
        "setRules": #"{"type":"setRules","table":"t","rules":{}}"#,
        "listTables": #"{"type":"listTables"}"#,
        "subscribe": #"{"type":"subscribe","table":"t"}"#,
        "refresh": #"{"type":"refresh","table":"t"}"#,
        "unsubscribe": #"{"type":"unsubscribe","table":"t"}"#,
        "editing": #"{"type":"editing","table":"t","on":true}"#,
        "beginEditingRow": #"{"type":"beginEditingRow","table":"t","row":"r1"}"#,
        "endEditingRow": #"{"type":"endEditingRow","table":"t","row":"r1"}"#,
        "insert": #"{"type":"insert","table":"t","at":[0,0],"value":1}"#,
        "delete": #"{"type":"delete","table":"t","at":[0,0]}"#,
        "move": #"{"type":"move","table":"t","from":[0,0],"to":[0,1]}"#,
        "edit": #"{"type":"edit","table":"t","at":[0,0],"value":1}"#,
        "insertSection": #"{"type":"insertSection","table":"t","at":0}"#,
        "deleteSection": #"{"type":"deleteSection","table":"t","at":0}"#,
        "moveSection": #"{"type":"moveSection","table":"t","from":0,"to":1}"#,
        "editSection": #"{"type":"editSection","table":"t","at":0}"#,
        "patch": #"{"type":"patch","table":"t","at":[0,0],"patch":{}}"#,
        "batch": #"{"type":"batch","table":"t"}"#,
        "history": #"{"type":"history","table":"t"}"#,
        "snapshotAt": #"{"type":"snapshotAt","table":"t","version":0}"#,
    ]

    func testUnknownFieldsOfEveryMessageAreRefusedByName() throws {
        XCTAssertEqual(Set(Self.validMessages.keys).count, 23)
        for (type, text) in Self.validMessages {
            XCTAssertNoThrow(try decode(text), type)
            assertRefused(
                String(text.dropLast()) + #","ref":"x","zzz":1}"#, .badRequest, "\(type).zzz: unknown field", ref: "x",
                at: "\(type).zzz")
        }
        // The issue's cases: a misspelt value, a misspelt list, a misspelt rule, "id" for "row".
        assertRefused(
            #"{"type":"insert","table":"t","at":[0,0],"value":1,"valeu":2}"#, .badRequest, "insert.valeu: unknown field"
        )
        assertRefused(
            #"{"type":"batch","table":"t","insertRow":[{"at":[0,0],"value":1}]}"#, .badRequest,
            "batch.insertRow: unknown field")
        assertRefused(
            #"{"type":"setRules","table":"t","rules":{"move":"none"}}"#, .badRequest,
            "setRules.rules.move: unknown field")
        assertRefused(#"{"type":"delete","table":"t","at":[0,0],"id":"r1"}"#, .badRequest, "delete.id: unknown field")
    }

    func testUnknownFieldsOfNestedObjectsAreRefusedByName() {
        let entries: [(list: String, entry: String)] = [
            ("deleteSections", #"{"at":0}"#), ("insertSections", #"{"at":0}"#), ("reloadSections", #"{"at":0}"#),
            ("moveSections", #"{"from":0,"to":1}"#), ("deleteRows", #"{"at":[0,0]}"#),
            ("insertRows", #"{"at":[0,0],"value":1}"#), ("reloadRows", #"{"at":[0,0],"value":1}"#),
            ("moveRows", #"{"from":[0,0],"to":[0,1]}"#), ("patchRows", #"{"at":[0,0],"patch":{"a":1}}"#),
        ]
        for (list, entry) in entries {
            XCTAssertNoThrow(try decode(#"{"type":"batch","table":"t","\#(list)":[\#(entry)]}"#), list)
            assertRefused(
                #"{"type":"batch","table":"t","\#(list)":[\#(entry.dropLast()),"id":"x"}]}"#, .badRequest,
                "\(list)[0].id: unknown field", at: "\(list)[0].id")
        }
        assertRefused(
            #"{"type":"batch","table":"t","insertSections":[{"at":0,"rows":[{"value":1,"id":"r9"}]}]}"#, .badRequest,
            "insertSections[0].rows[0].id: unknown field")
        assertRefused(
            #"{"type":"insertSection","table":"t","at":0,"rows":[{"value":1,"colour":"red"}]}"#, .badRequest,
            "insertSection.rows[0].colour: unknown field")
        assertRefused(
            #"{"type":"createTable","table":"t","sections":[{"header":"H","title":"x"}]}"#, .badRequest,
            "createTable.sections[0].title: unknown field")
        assertRefused(
            #"{"type":"createTable","table":"t","sections":[{"rows":[{"value":1,"flag":true}]}]}"#, .badRequest,
            "createTable.sections[0].rows[0].flag: unknown field")
        assertRefused(
            #"{"type":"createTable","table":"t","rules":{"moves":"any","reserve":true}}"#, .badRequest,
            "createTable.rules.reserve: unknown field")
    }

    func testTableNames() throws {
        for valid in ["a", "A9", "team-red_1.list", String(repeating: "x", count: 64)] {
            XCTAssertEqual(try decode(#"{"type":"dropTable","table":"\#(valid)"}"#).table, valid)
        }
        for invalid in ["", "-lead", ".hidden", "spa ce", "slash/x", "é", String(repeating: "x", count: 65)] {
            assertRefused(
                #"{"type":"dropTable","table":"\#(invalid)"}"#, .badRequest,
                "dropTable.table: table name '\(invalid)' is not valid: 1 to 64 characters of letters, digits, '.', '_' and '-', "
                    + "starting with a letter or digit")
        }
    }

    func testRulesPatchIsValidatedAndApplied() throws {
        assertRefused(
            #"{"type":"setRules","table":"t","rules":{"moves":"sideways"}}"#, .badRequest,
            "setRules.rules.moves: expected one of \"any\", \"withinSection\", \"none\", got a string")
        assertRefused(
            #"{"type":"setRules","table":"t","rules":{"maxSections":0}}"#, .badRequest,
            "setRules.rules.maxSections: expected a positive integer")
        assertRefused(
            #"{"type":"setRules","table":"t","rules":{"deleteConfirmationTitle":""}}"#, .badRequest,
            "setRules.rules.deleteConfirmationTitle: expected 1 to 64 characters")
        let patch = RulesPatch(moves: TableRules.Moves.none, deleteConfirmationTitle: "Remove")
        let rules = patch.applied(to: TableRules(reserveLastRow: true))
        XCTAssertEqual(
            rules, TableRules(moves: TableRules.Moves.none, reserveLastRow: true, deleteConfirmationTitle: "Remove"))
    }

    func testBatchEntryLimitCountsRowsOfInsertedSections() throws {
        let limits = ProtocolLimits(maxBatchEntries: 3)
        XCTAssertNoThrow(
            try decode(
                #"{"type":"batch","table":"t","insertSections":[{"at":0,"rows":[{"value":1}]}],"deleteRows":[{"at":[0,0]}]}"#,
                limits: limits)
                as ClientMessage?)
        assertRefused(
            #"{"type":"batch","table":"t","ref":"big","insertSections":[{"at":0,"rows":[{"value":1},{"value":2}]}],"deleteRows":[{"at":[0,0]}]}"#,
            .limitExceeded, "batch has 4 entries; the limit is 3", ref: "big", limits: limits)
    }

    func testHostileNestingIsRefusedNotCrashed() {
        let deep = String(repeating: "[", count: 100_000)
        XCTAssertThrowsError(try decode(#"{"type":"insert","table":"t","at":[0,0],"value":\#(deep)"#)) { error in
            XCTAssertEqual((error as? ProtocolError)?.code, .badRequest)
        }
    }
}
