import TableModel
import TablecastEditor
import TablecastProtocol
import XCTest

final class EditorTests: XCTestCase {
    /// s1 "Fruit" [r2 fig, r3 苹果, r4 {"qty":2}] footer "fresh"; s5 "Dairy" [r6 milk].
    func makeEditor(rules: TableRules = TableRules()) -> Editor {
        var editor = Editor(tableName: "groceries", me: "me", myName: "Me")
        editor.replaceTable(
            Table(
                contents: [
                    SectionContent(
                        header: "Fruit", footer: "fresh",
                        rows: [RowContent(value: "fig"), RowContent(value: "苹果"), RowContent(value: ["qty": 2])]),
                    SectionContent(header: "Dairy", rows: [RowContent(value: "milk")]),
                ], rules: rules))
        return editor
    }

    func type(_ text: String, into editor: inout Editor) -> [EditorCommand] {
        text.flatMap { editor.handle(.character($0)) }
    }

    func testTheCursorStartsOnTheFirstLineAndMovesByItems() {
        var editor = makeEditor()
        XCTAssertEqual(editor.cursor, .section("s1"))
        _ = editor.handle(.down)
        XCTAssertEqual(editor.cursor, .row("r2"))
        _ = editor.handle(.character("G"))
        XCTAssertEqual(editor.cursor, .row("r6"))
        _ = editor.handle(.up)
        XCTAssertEqual(editor.cursor, .section("s5"))
    }

    func testTheCursorStaysOnItsRowByIDWhenOthersInsertAndMoveRows() {
        var editor = makeEditor()
        editor.setCursor(.row("r3"))
        var table = editor.table
        table.sections[0].rows.insert(Row(id: "r9", value: "new"), at: 0)
        let moved = table.sections[0].rows.remove(at: 2) // r3 goes to the other section
        table.sections[1].rows.append(moved)
        table.version = 2
        editor.replaceTable(table)
        XCTAssertEqual(editor.cursor, .row("r3"))
        XCTAssertEqual(editor.path(ofRow: "r3"), RowPath(section: 1, row: 1))
    }

    func testWhenTheCursorRowIsDeletedTheCursorTakesTheLineInItsPlace() {
        var editor = makeEditor()
        editor.setCursor(.row("r3"))
        var table = editor.table
        table.sections[0].rows.remove(at: 1)
        editor.replaceTable(table)
        XCTAssertEqual(editor.cursor, .row("r4"))
    }

    func testAddInsertsTheTypedStringAfterTheCursor() {
        var editor = makeEditor()
        editor.setCursor(.row("r2"))
        XCTAssertEqual(editor.handle(.character("a")), [])
        XCTAssertEqual(type("kiwi", into: &editor), [])
        let commands = editor.handle(.enter)
        XCTAssertEqual(
            commands,
            [
                .send(
                    .insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "kiwi")), base: 0, label: "insert",
                    requested: RowPath(section: 0, row: 1))
            ])
        XCTAssertEqual(editor.mode, .browse)
    }

    func testAnEqualsPrefixMeansJSON() {
        var editor = makeEditor()
        editor.setCursor(.section("s5"))
        _ = editor.handle(.character("a"))
        _ = type("={\"n\":1}", into: &editor)
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(
                    .insert(at: RowPath(section: 1, row: 0), row: RowContent(value: ["n": 1])), base: 0,
                    label: "insert", requested: RowPath(section: 1, row: 0))
            ])
        // Not JSON: the input stays open with an error.
        _ = editor.handle(.character("a"))
        _ = type("={oops", into: &editor)
        XCTAssertEqual(editor.handle(.enter), [])
        XCTAssertEqual(editor.status?.isError, true)
        if case .input = editor.mode {} else { XCTFail("input closed") }
    }

    func testEditingInPlaceSendsPresenceAroundTheEdit() {
        var editor = makeEditor()
        editor.setCursor(.row("r4"))
        XCTAssertEqual(editor.handle(.enter), [.beginEditingRow("r4")])
        guard case .input(let input) = editor.mode else { return XCTFail("no input") }
        XCTAssertEqual(input.text, "={\"qty\":2}") // a non-string value is edited as JSON
        _ = editor.handle(.ctrl("u"))
        _ = type("figs", into: &editor)
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(
                    .edit(RowRef(RowPath(section: 0, row: 2), id: "r4"), value: "figs"), base: 0, label: "edit",
                    requested: RowPath(section: 0, row: 2)),
                .endEditingRow("r4"),
            ])
        // Escape cancels and still ends the presence.
        _ = editor.handle(.character("e"))
        XCTAssertEqual(editor.handle(.escape), [.endEditingRow("r4")])
    }

    /// An item (issue 24) shows as `[x] title — note`; `x` ticks it and editing edits its title, each with a patch of
    /// that field alone.
    func testItemsShowTheirTitleAndDoneMarkAndAreChangedByPatches() {
        var editor = Editor(tableName: "groceries", me: "me", myName: "Me")
        editor.replaceTable(
            Table(contents: [
                SectionContent(rows: [
                    RowContent(value: ["title": "Yogurt", "done": true, "note": "greek"]),
                    RowContent(value: ["title": "Milk"]), RowContent(value: "plain"),
                ])
            ]))
        XCTAssertEqual(Editor.display(["title": "Yogurt", "done": true, "note": "greek"]), "[x] Yogurt — greek")
        XCTAssertEqual(Editor.display(["title": "Milk", "done": false]), "[ ] Milk")
        XCTAssertEqual(Editor.display(["title": 1]), #"{"title":1}"#)
        let text = editor.frame(width: 40, height: 10).lines.joined(separator: "\n")
        XCTAssertTrue(text.contains("[x] Yogurt — greek"), text)
        let yogurt = RowRef(RowPath(section: 0, row: 0), id: "r2")
        editor.setCursor(.row("r2"))
        XCTAssertEqual(
            editor.handle(.character("x")),
            [.send(.patch(yogurt, patch: ["done": false]), base: 0, label: "done", requested: yogurt.path)])
        editor.setCursor(.row("r3"))
        XCTAssertEqual(
            editor.handle(.character("x")),
            [
                .send(
                    .patch(RowRef(RowPath(section: 0, row: 1), id: "r3"), patch: ["done": true]), base: 0,
                    label: "done", requested: RowPath(section: 0, row: 1))
            ])
        editor.setCursor(.row("r4"))
        XCTAssertEqual(editor.handle(.character("x")), [])
        XCTAssertEqual(editor.status?.isError, true)
        // Editing an item edits its title, as typed (no '=' JSON).
        editor.setCursor(.row("r2"))
        XCTAssertEqual(editor.handle(.enter), [.beginEditingRow("r2")])
        guard case .input(let input) = editor.mode else { return XCTFail("no input") }
        XCTAssertEqual(input.text, "Yogurt")
        _ = editor.handle(.ctrl("u"))
        _ = type("=Skyr", into: &editor)
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(.patch(yogurt, patch: ["title": "=Skyr"]), base: 0, label: "edit", requested: yogurt.path),
                .endEditingRow("r2"),
            ])
    }

    func testDeleteNeedsTheOneKeyConfirmationWhichShowsTheTablesTitle() {
        var rules = TableRules()
        rules.deleteConfirmationTitle = "Remove"
        var editor = makeEditor(rules: rules)
        editor.setCursor(.row("r2"))
        XCTAssertEqual(editor.handle(.character("d")), [.beginEditingRow("r2")])
        let frame = editor.frame(width: 60, height: 14)
        XCTAssertTrue(frame.lines[13].contains("“fig”: [y] Remove"), frame.lines[13])
        XCTAssertEqual(
            editor.handle(.character("y")),
            [
                .send(.delete(RowRef(RowPath(section: 0, row: 0), id: "r2")), base: 0, label: "delete", requested: nil),
                .endEditingRow("r2"),
            ])
        // Any other key cancels.
        _ = editor.handle(.character("d"))
        XCTAssertEqual(editor.handle(.character("n")), [.endEditingRow("r2")])
    }

    func testEditingModeSelectsRowsAndDeletesThemInOneBatch() {
        var editor = makeEditor()
        XCTAssertEqual(editor.handle(.character("E")), [.setEditing(true)])
        editor.setCursor(.row("r2"))
        _ = editor.handle(.character(" ")) // selects r2; the cursor stays on it
        XCTAssertEqual(editor.cursor, .row("r2"))
        _ = editor.handle(.character("G"))
        _ = editor.handle(.character(" ")) // selects r6
        XCTAssertEqual(editor.selection, ["r2", "r6"])
        let lines = editor.frame(width: 40, height: 14).lines
        XCTAssertTrue(lines.contains { $0.hasPrefix("    [x] ⊖ fig") && $0.hasSuffix("≡") })
        XCTAssertEqual(editor.handle(.character("D")), [])
        XCTAssertEqual(
            editor.handle(.character("y")),
            [
                .send(
                    .batch(
                        ClientBatch(deleteRows: [
                            RowRef(RowPath(section: 0, row: 0), id: "r2"),
                            RowRef(RowPath(section: 1, row: 0), id: "r6"),
                        ])),
                    base: 0, label: "delete 2 rows", requested: nil)
            ])
        XCTAssertEqual(editor.handle(.character("E")), [.setEditing(false)])
    }

    func testMovesProposeTheNeighbouringPlaceAndCrossSections() {
        var editor = makeEditor()
        editor.setCursor(.row("r3"))
        XCTAssertEqual(
            editor.handle(.character("K")),
            [
                .send(
                    .move(from: RowRef(RowPath(section: 0, row: 1), id: "r3"), to: RowPath(section: 0, row: 0)),
                    base: 0, label: "move", requested: RowPath(section: 0, row: 0))
            ])
        XCTAssertEqual(
            editor.handle(.character("]")),
            [
                .send(
                    .move(from: RowRef(RowPath(section: 0, row: 1), id: "r3"), to: RowPath(section: 1, row: 0)),
                    base: 0, label: "move", requested: RowPath(section: 1, row: 0))
            ])
        editor.setCursor(.row("r6"))
        XCTAssertEqual(
            editor.handle(.character("[")),
            [
                .send(
                    .move(from: RowRef(RowPath(section: 1, row: 0), id: "r6"), to: RowPath(section: 0, row: 3)),
                    base: 0, label: "move", requested: RowPath(section: 0, row: 3))
            ])
    }

    func testARetargetedMoveIsShown() {
        var editor = makeEditor()
        editor.acked(
            label: "move", ack: ServerMessage.Ack(ref: "1", table: "groceries", version: 3, resolved: [[0, 2]]),
            requested: RowPath(section: 1, row: 0))
        XCTAssertEqual(editor.status?.text, "moved: the server put it at [0,2], not [1,0] (v3)")
    }

    func testServerErrorsShowInTheStatusLine() {
        var editor = makeEditor()
        editor.failed(label: "edit", message: "not_editable: row r2 is not editable")
        let lines = editor.frame(width: 60, height: 14).lines
        XCTAssertTrue(lines[12].contains("✗ edit failed: not_editable: row r2 is not editable"), lines[12])
    }

    func testCopyAndPasteInsertsACopyAfterTheCursor() {
        var editor = makeEditor()
        editor.setCursor(.row("r4"))
        _ = editor.handle(.character("c"))
        editor.setCursor(.row("r6"))
        XCTAssertEqual(
            editor.handle(.character("p")),
            [
                .send(
                    .insert(at: RowPath(section: 1, row: 1), row: RowContent(value: ["qty": 2])), base: 0,
                    label: "paste", requested: RowPath(section: 1, row: 1))
            ])
    }

    func testRefreshShowsRefreshingUntilRefreshed() {
        var editor = makeEditor()
        XCTAssertEqual(editor.handle(.character("r")), [.refresh])
        XCTAssertTrue(editor.frame(width: 60, height: 14).lines[0].contains("refreshing…"))
        editor.refreshed(version: 7)
        XCTAssertFalse(editor.frame(width: 60, height: 14).lines[0].contains("refreshing…"))
    }

    func testUndoAndRedoKeys() {
        var editor = makeEditor()
        XCTAssertEqual(editor.handle(.character("u")), [.undo])
        XCTAssertEqual(editor.handle(.character("U")), [.redo])
        XCTAssertEqual(editor.handle(.ctrl("r")), [.redo])
        var pending = editor.table
        pending.sections[0].rows[0].id = "~1"
        editor.replaceTable(pending)
        XCTAssertTrue(editor.frame(width: 60, height: 14).lines.contains { $0.contains("(sending…)") })
        editor.nothingTo("undo")
        XCTAssertEqual(editor.status?.text, "nothing to undo")
        editor.acked(label: "undo", ack: nil, requested: nil)
        XCTAssertEqual(editor.status?.text, "undo: nothing to do")
    }

    func testHeadersFootersAndSectionsAreEditable() {
        var editor = makeEditor()
        editor.setCursor(.row("r6"))
        _ = editor.handle(.character("h"))
        _ = editor.handle(.ctrl("u"))
        _ = type("Cold", into: &editor)
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(
                    .editSection(SectionRef(1, id: "s5"), header: .some("Cold")), base: 0, label: "section",
                    requested: nil)
            ])
        _ = editor.handle(.character("f"))
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(
                    .editSection(SectionRef(1, id: "s5"), footer: .some(nil)), base: 0, label: "section", requested: nil
                )
            ])
        _ = editor.handle(.character("A"))
        _ = type("Bakery", into: &editor)
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(
                    .insertSection(at: 2, section: SectionContent(header: "Bakery")), base: 0, label: "new section",
                    requested: nil)
            ])
    }

    func testReconnectingSaysWhyWhenItIsKnown() {
        XCTAssertEqual(ConnectionDisplay.reconnecting(seconds: 2).text, "reconnecting in 2s")
        XCTAssertEqual(
            ConnectionDisplay.reconnecting(seconds: 2, reason: "connection refused").text,
            "reconnecting in 2s: connection refused")
    }

    func testTheFrameShowsSectionsRowsPresenceAndState() {
        var editor = makeEditor()
        editor.connection = .reconnecting(seconds: 3)
        editor.me = "c1"
        editor.presence = [
            PresenceEntry(key: "c1", client: "me", name: "Me", editing: false, row: nil),
            PresenceEntry(key: "c2", client: "b", name: "Bob", editing: true, row: "r3"),
        ]
        editor.setCursor(.row("r2"))
        let lines = editor.frame(width: 30, height: 14).lines
        XCTAssertEqual(lines[0], " groceries · v0 · reconnectin…")
        // 苹 would straddle the edge: cut before it, the gap filled with a space.
        XCTAssertEqual(lines[1], " here: Bob (editing mode) ✎ … ")
        XCTAssertEqual(lines[3], "  ▼ Fruit                     ")
        XCTAssertEqual(lines[4], "▶   fig                       ")
        XCTAssertEqual(lines[5], "    苹果                 ✎ Bob")
        XCTAssertEqual(lines[6], "    {\"qty\":2}                 ")
        XCTAssertEqual(lines[7], "    └ fresh                   ")
        XCTAssertEqual(lines[8], "  ▼ Dairy                     ")
        for line in lines { XCTAssertEqual(DisplayWidth.of(line), 30, line) }
    }

    func testTheBodyScrollsToKeepTheCursorVisible() {
        var editor = makeEditor()
        _ = editor.handle(.character("G"))
        let lines = editor.frame(width: 30, height: 7).lines // two body lines
        XCTAssertEqual(lines[3...4].map { $0.trimmingCharacters(in: .whitespaces) }, ["▼ Dairy", "▶   milk"])
    }

    func testHelpListsEveryKeyAndQQuits() {
        var editor = makeEditor()
        _ = editor.handle(.character("?"))
        let text = editor.frame(width: 100, height: 30).lines.joined(separator: "\n")
        for entry in Editor.keyTable { XCTAssertTrue(text.contains(entry.action), entry.action) }
        XCTAssertEqual(editor.handle(.character("x")), [])
        XCTAssertEqual(editor.mode, .browse)
        XCTAssertEqual(editor.handle(.character("q")), [.quit])
    }

    func testPresenceIsAnnouncedAgainAfterAReconnect() {
        var editor = makeEditor()
        XCTAssertEqual(editor.presenceCommands, [])
        _ = editor.handle(.character("E"))
        editor.setCursor(.row("r2"))
        _ = editor.handle(.character("e"))
        XCTAssertEqual(editor.presenceCommands, [.setEditing(true), .beginEditingRow("r2")])
    }

    func testRemoteChangesWhileTypingKeepTheInputAndTheCursor() {
        var editor = makeEditor()
        editor.setCursor(.row("r3"))
        _ = editor.handle(.character("e"))
        _ = type("!", into: &editor)
        var table = editor.table
        table.sections[0].rows.remove(at: 0) // someone deletes fig above
        table.version = 1
        editor.replaceTable(table)
        XCTAssertEqual(editor.cursor, .row("r3"))
        guard case .input(let input) = editor.mode else { return XCTFail("input closed") }
        XCTAssertEqual(input.text, "苹果!")
        // The edit names the row where it is now, at the version shown.
        XCTAssertEqual(
            editor.handle(.enter).first,
            .send(
                .edit(RowRef(RowPath(section: 0, row: 0), id: "r3"), value: "苹果!"), base: 1, label: "edit",
                requested: RowPath(section: 0, row: 0)))
    }

    func testARowDeletedWhileBeingEditedEndsTheInputWithAMessage() {
        var editor = makeEditor()
        editor.setCursor(.row("r3"))
        _ = editor.handle(.character("e"))
        var table = editor.table
        table.sections[0].rows.remove(at: 1)
        editor.replaceTable(table)
        XCTAssertEqual(editor.mode, .browse)
        XCTAssertEqual(editor.cursor, .row("r4"))
        XCTAssertEqual(editor.status?.isError, true)
    }
    /// s1 "Fruit" [r2 fig (locked), r3 Add… (insert), r4 water (none), r5 kiwi].
    func makeStyledEditor() -> Editor {
        var editor = Editor(tableName: "t", me: "me", myName: "Me")
        editor.replaceTable(
            Table(contents: [
                SectionContent(
                    header: "Fruit",
                    rows: [
                        RowContent(value: "fig", editable: false, movable: false),
                        RowContent(value: "Add…", editingStyle: .insert),
                        RowContent(value: "water", editingStyle: .none), RowContent(value: "kiwi"),
                    ])
            ]))
        return editor
    }

    /// A row the server would refuse to delete is refused at once, as `e` is for a locked row: no prompt, no
    /// presence, nothing sent; nor can it be selected for `D`.
    func testDeletingARowThatCannotBeDeletedIsRefusedAtOnce() {
        var editor = makeStyledEditor()
        for (id, text) in [
            ("r2", "this row is locked: it cannot be deleted"),
            ("r3", "this row is an add-item placeholder: it cannot be deleted"),
            ("r4", "this row cannot be deleted"),
        ] {
            editor.setCursor(.row(id))
            XCTAssertEqual(editor.handle(.character("d")), [])
            XCTAssertEqual(editor.mode, .browse)
            XCTAssertEqual(editor.status?.text, text)
            XCTAssertEqual(editor.status?.isError, true)
        }
        _ = editor.handle(.character("E"))
        _ = editor.handle(.character(" "))
        XCTAssertEqual(editor.selection, [])
        XCTAssertEqual(editor.status?.text, "this row cannot be deleted")
        // A selected row that an admin locks meanwhile leaves the selection, so D never sends it.
        editor.setCursor(.row("r5"))
        _ = editor.handle(.character(" "))
        XCTAssertEqual(editor.selection, ["r5"])
        var table = editor.table
        table.sections[0].rows[3].editable = false
        editor.replaceTable(table)
        XCTAssertEqual(editor.selection, [])
        // The table-wide reserved last row too.
        var rules = TableRules()
        rules.reserveLastRow = true
        var reserved = makeEditor(rules: rules)
        reserved.setCursor(.row("r4"))
        XCTAssertEqual(reserved.handle(.delete), [])
        XCTAssertEqual(reserved.status?.text, "this row is an add-item placeholder: it cannot be deleted")
    }

    /// Moving a row the server would refuse to move is refused at once too.
    func testMovingAPlaceholderOrUnmovableRowIsRefusedAtOnce() {
        var editor = makeStyledEditor()
        editor.setCursor(.row("r3"))
        XCTAssertEqual(editor.handle(.character("J")), [])
        XCTAssertEqual(editor.status?.text, "this row is an add-item placeholder: it cannot be moved")
        editor.setCursor(.row("r2"))
        XCTAssertEqual(editor.handle(.character("J")), [])
        XCTAssertEqual(editor.status?.text, "this row cannot be moved")
        // A none row moves as any other.
        editor.setCursor(.row("r4"))
        XCTAssertEqual(editor.handle(.character("J")).count, 1)
    }

    /// In editing mode each row shows its editing control: ⊖ delete, ⊕ insertion, nothing for none (or a locked
    /// row); outside it the add-item placeholder still shows ⊕. Adding on a ⊕ row adds above it.
    func testEditingControlsFollowTheRowsEditingStyle() {
        var editor = makeStyledEditor()
        var lines = editor.frame(width: 40, height: 12).lines
        XCTAssertEqual(lines[5].trimmingCharacters(in: .whitespaces), "⊕ Add…")
        _ = editor.handle(.character("E"))
        lines = editor.frame(width: 40, height: 12).lines
        XCTAssertEqual(
            lines[4...7].map { $0.replacingOccurrences(of: " +$", with: "", options: .regularExpression) },
            [
                "          fig  (locked)", "        ⊕ Add…", "          water                        ≡",
                "    [ ] ⊖ kiwi                         ≡",
            ])
        editor.setCursor(.row("r3"))
        for key in [Key.character("a"), .enter] { // a, or Enter on the insertion control
            XCTAssertEqual(editor.handle(key), [])
            _ = type("pear", into: &editor)
            XCTAssertEqual(
                editor.handle(.enter),
                [
                    .send(
                        .insert(at: RowPath(section: 0, row: 1), row: RowContent(value: "pear")), base: 0,
                        label: "insert", requested: RowPath(section: 0, row: 1))
                ])
        }
    }

    /// A copied locked row pastes as an ordinary row: flags are an admin's decision, which a writer may not send.
    func testPasteSendsTheValueNotTheFlags() {
        var editor = makeStyledEditor()
        editor.setCursor(.row("r2"))
        _ = editor.handle(.character("c"))
        XCTAssertEqual(editor.status?.text, "copied “fig”: p pastes it after the cursor")
        XCTAssertEqual(editor.status?.isError, false)
        editor.setCursor(.row("r5"))
        XCTAssertEqual(
            editor.handle(.character("p")),
            [
                .send(
                    .insert(at: RowPath(section: 0, row: 4), row: RowContent(value: "fig")), base: 0, label: "paste",
                    requested: RowPath(section: 0, row: 4))
            ])
        // On a section line there is nothing to copy, and it says so.
        editor.setCursor(.section("s1"))
        _ = editor.handle(.character("c"))
        XCTAssertEqual(editor.status?.text, "put the cursor on a row to copy it")
        XCTAssertEqual(editor.status?.isError, true)
    }

    /// After `A` the cursor goes to the new section once the server has it, so `f` edits that section's footer.
    func testTheCursorGoesToANewSection() {
        var editor = makeEditor()
        editor.setCursor(.row("r2"))
        _ = editor.handle(.character("A"))
        _ = type("Bakery", into: &editor)
        _ = editor.handle(.enter)
        // The ack may come before or after the update that shows the section.
        editor.acked(
            label: "new section", ack: ServerMessage.Ack(ref: "1", table: "groceries", version: 1, created: ["s7"]),
            requested: nil)
        XCTAssertEqual(editor.cursor, .row("r2"))
        var table = editor.table
        table.sections.insert(Section(id: "s7", header: "Bakery", footer: nil, rows: []), at: 1)
        table.version = 1
        editor.replaceTable(table)
        XCTAssertEqual(editor.cursor, .section("s7"))
        _ = editor.handle(.character("f"))
        _ = type("daily", into: &editor)
        XCTAssertEqual(
            editor.handle(.enter),
            [
                .send(
                    .editSection(SectionRef(1, id: "s7"), footer: .some("daily")), base: 1, label: "section",
                    requested: nil)
            ])
    }

    /// On a section line, `d` deletes the section (after the confirmation, which names it and counts its rows)
    /// and `K`/`J` move it (deleteSections, moveSection:toSection:).
    func testSectionsAreDeletedAndMovedFromTheirLine() {
        var editor = makeEditor()
        editor.setCursor(.section("s1"))
        XCTAssertEqual(editor.handle(.character("d")), [])
        XCTAssertEqual(editor.mode, .confirmDeleteSection("s1"))
        let prompt = editor.frame(width: 80, height: 14).lines[13]
        XCTAssertTrue(prompt.contains("Section “Fruit” and its 3 rows: [y] Delete"), prompt)
        XCTAssertEqual(editor.handle(.character("n")), [])
        XCTAssertEqual(editor.status?.text, "delete cancelled")
        _ = editor.handle(.character("d"))
        XCTAssertEqual(
            editor.handle(.character("y")),
            [.send(.deleteSection(SectionRef(0, id: "s1")), base: 0, label: "delete section", requested: nil)])
        XCTAssertEqual(
            editor.handle(.character("J")),
            [.send(.moveSection(from: SectionRef(0, id: "s1"), to: 1), base: 0, label: "move section", requested: nil)])
        XCTAssertEqual(editor.handle(.character("K")), []) // already first
        editor.setCursor(.section("s5"))
        XCTAssertEqual(
            editor.handle(.character("K")),
            [.send(.moveSection(from: SectionRef(1, id: "s5"), to: 0), base: 0, label: "move section", requested: nil)])
    }
}
