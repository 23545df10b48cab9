import Foundation
import Testing
@testable import PersistenceKit

/// A new entity costs no rewrite wherever its name sorts: the file keeps its numbering of
/// entities, and the layout sidecar maps it to the new model's.
@Suite("New entities migrate without a rewrite wherever their names sort") struct EntityNumberingMigrationTests {
    typealias S = MigrationSupport

    static let noteBody = #"""
        <attribute name="title" attributeType="String" defaultValueString=""/>
        <relationship name="lead" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Tag" inverseName="leads" inverseEntity="Tag"/>
        <relationship name="tags" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Tag" inverseName="notes" inverseEntity="Tag"/>
        """#
    static let tagBody = #"""
        <attribute name="label" attributeType="String" defaultValueString=""/>
        <relationship name="leads" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="lead" inverseEntity="Note"/>
        <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="tags" inverseEntity="Note"/>
        """#
    static let fans = #"<relationship name="fans" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Author" inverseName="favourite" inverseEntity="Author"/>"#
    /// Notes and tags, linked many-to-many and one-to-many.
    static let v1 = #"<entity name="Note">\#(noteBody)</entity><entity name="Tag">\#(tagBody)</entity>"#
    /// `Author` sorts before every old entity, `Page` between them; an author's favourite
    /// note is a link between a new entity and an old one (whose end is appended).
    static let v2 = #"<entity name="Note">\#(noteBody)\#(fans)</entity><entity name="Tag">\#(tagBody)</entity>"# + #"""
        <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
        <relationship name="favourite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Note" inverseName="fans" inverseEntity="Note"/></entity>
        <entity name="Page"><attribute name="number" optional="YES" attributeType="Integer 32"/></entity>
        """#
    /// On top of version 2: `Box` sorts between `Author` and `Note`, and tags get an
    /// optional colour.
    static let v3 = #"""
        <entity name="Note">\#(noteBody)\#(fans)<relationship name="box" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Box" inverseName="note" inverseEntity="Box"/></entity>
        <entity name="Tag">\#(tagBody)<attribute name="colour" optional="YES" attributeType="String"/></entity>
        <entity name="Author"><attribute name="name" optional="YES" attributeType="String"/>
        <relationship name="favourite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Note" inverseName="fans" inverseEntity="Note"/></entity>
        <entity name="Page"><attribute name="number" optional="YES" attributeType="Integer 32"/></entity>
        <entity name="Box"><attribute name="size" optional="YES" attributeType="Integer 32"/>
        <relationship name="note" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Note" inverseName="box" inverseEntity="Note"/></entity>
        """#

    /// What the old objects hold: each note's lead and tags, each tag's notes (by title and label).
    struct Links: Equatable {
        var notes: [String: [String]] = [:]
        var tags: [String: [String]] = [:]
    }

    static let seeded = Links(
        notes: ["note 0": ["lead t0", "t0", "t1"], "note 1": ["lead -", "t1"], "note 2": ["lead t1"]],
        tags: ["t0": ["leads note 0", "note 0"], "t1": ["leads note 2", "note 0", "note 1"]])

    static func seed(_ url: URL, model: NSManagedObjectModel) throws {
        let container = try S.container(at: url, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let tags = try ["t0", "t1"].map { label in
                let tag = NSManagedObject(entity: try #require(model.entitiesByName["Tag"]), insertInto: context)
                tag.setValue(label, forKey: "label")
                return tag
            }
            let notes = try (0..<3).map { i in
                let note = NSManagedObject(entity: try #require(model.entitiesByName["Note"]), insertInto: context)
                note.setValue("note \(i)", forKey: "title")
                return note
            }
            notes[0].setValue(tags[0], forKey: "lead")
            notes[2].setValue(tags[1], forKey: "lead")
            notes[0].mutableSetValue(forKey: "tags").insert(tags[0])
            notes[0].mutableSetValue(forKey: "tags").insert(tags[1])
            notes[1].mutableSetValue(forKey: "tags").insert(tags[1])
            try context.save()
        }
        try FSSupport.close(container)
    }

    static func links(_ container: NSPersistentContainer) throws -> Links {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var links = Links()
            func text(_ o: NSManagedObject, _ key: String) -> String { o.value(forKey: key) as? String ?? "?" }
            for note in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")) {
                let lead = (note.value(forKey: "lead") as? NSManagedObject).map { text($0, "label") } ?? "-"
                let tags = note.mutableSetValue(forKey: "tags").objects.map { text($0, "label") }.sorted()
                links.notes[text(note, "title")] = ["lead \(lead)"] + tags
            }
            for tag in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Tag")) {
                let leads = tag.mutableSetValue(forKey: "leads").objects.map { text($0, "title") }.sorted()
                let notes = tag.mutableSetValue(forKey: "notes").objects.map { text($0, "title") }.sorted()
                links.tags[text(tag, "label")] = leads.map { "leads \($0)" } + notes
            }
            return links
        }
    }

    /// The file's identity and size: a rewrite replaces the file (a new inode).
    static func identity(_ url: URL) throws -> [String] {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return ["\(attributes[.systemFileNumber] ?? "?")", "\(attributes[.size] ?? "?")"]
    }

    /// Inserts an author whose favourite is the note titled `favourite` and a page.
    static func insertAuthor(_ name: String, favourite: String, page: Int32, into container: NSPersistentContainer) throws {
        let model = container.managedObjectModel
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
            let note = try #require(try context.fetch(request).first { ($0.value(forKey: "title") as? String) == favourite })
            let author = NSManagedObject(entity: try #require(model.entitiesByName["Author"]), insertInto: context)
            author.setValue(name, forKey: "name")
            author.setValue(note, forKey: "favourite")
            let p = NSManagedObject(entity: try #require(model.entitiesByName["Page"]), insertInto: context)
            p.setValue(page, forKey: "number")
            try context.save()
        }
    }

    /// Each author's name with the title of their favourite note, and the page numbers.
    static func authors(_ container: NSPersistentContainer) throws -> (authors: [String: String], pages: [Int32]) {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var authors: [String: String] = [:]
            for a in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")) {
                authors[a.value(forKey: "name") as? String ?? "?"] =
                    (a.value(forKey: "favourite") as? NSManagedObject)?.value(forKey: "title") as? String ?? "-"
            }
            let pages = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Page")).compactMap { $0.value(forKey: "number") as? Int32 }
            // The old entity's appended end reads the same links from its side.
            var fans: [String: String] = [:]
            for note in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")) {
                for fan in note.mutableSetValue(forKey: "fans").objects {
                    fans[fan.value(forKey: "name") as? String ?? "?"] = note.value(forKey: "title") as? String ?? "?"
                }
            }
            #expect(fans == authors, "each favourite note lists its fans")
            return (authors, pages.sorted())
        }
    }

    @Test func entitiesSortingFirstAndBetweenKeepTheFile() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", Self.v2)], current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let before = try Self.identity(folder.storeURL)
        let v2 = try NSManagedObjectModel(modelFileAt: bundle)

        var container = try S.container(at: folder.storeURL, model: v2)
        #expect(try Self.identity(folder.storeURL) == before, "the store file was neither replaced nor written")
        let header = try FileStore.readHeader(at: folder.storeURL.path).modelHash
        let layout = FileStore.effectiveLayout(header: header, path: folder.storeURL.path)
        #expect(layout.hash == v2.layoutHash.prefix(16))
        // Stored Note 0, Tag 1; the model's Author 0, Note 1, Page 2, Tag 3.
        #expect(layout.numbering?.toModel == [1, 3, 0, 2], "old entities keep their stored indexes, new ones come after")
        #expect(try Self.links(container) == Self.seeded, "every old object and link reads as before")

        try Self.insertAuthor("Ada", favourite: "note 2", page: 7, into: container)
        try FSSupport.close(container)
        container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        #expect(try Self.authors(container).authors == ["Ada": "note 2"])
        #expect(try Self.authors(container).pages == [7])
        #expect(try Self.links(container) == Self.seeded)

        // Compaction writes the model's own numbering into a new file, and the sidecar goes.
        try #require(FSSupport.fileStores(container).first).compact()
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix))
        try Self.insertAuthor("Bo", favourite: "note 0", page: 8, into: container)
        try FSSupport.close(container)
        #expect(try FileStore.readHeader(at: folder.storeURL.path).modelHash == v2.layoutHash.prefix(16))
        container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        #expect(try Self.authors(container).authors == ["Ada": "note 2", "Bo": "note 0"])
        #expect(try Self.authors(container).pages == [7, 8])
        #expect(try Self.links(container) == Self.seeded)
        try FSSupport.close(container)
    }

    @Test func aSecondMigrationBuildsOnTheFilesNumbering() throws {
        let folder = try TemporaryFolder()
        let versions = [("V1", Self.v1), ("V2", Self.v2), ("V3", Self.v3)]
        let bundle2 = try S.bundle(in: folder.url, versions: versions, current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle2.appendingPathComponent("V1.xcdatamodel")))
        let before = try Self.identity(folder.storeURL)
        var container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle2))
        try Self.insertAuthor("Ada", favourite: "note 1", page: 3, into: container)
        try FSSupport.close(container)
        let written = try Self.identity(folder.storeURL)
        #expect(written[0] == before[0], "the same file took the save")

        let bundle3 = try S.bundle(in: folder.url, versions: versions, current: "V3")
        let v3 = try NSManagedObjectModel(modelFileAt: bundle3)
        container = try S.container(at: folder.storeURL, model: v3)
        #expect(try Self.identity(folder.storeURL) == written, "the second migration rewrote nothing either")
        let header = try FileStore.readHeader(at: folder.storeURL.path).modelHash
        let layout = FileStore.effectiveLayout(header: header, path: folder.storeURL.path)
        // The model's Author 0, Box 1, Note 2, Page 3, Tag 4; stored Note 0, Tag 1, Author 2,
        // Page 3, Box 4.
        #expect(layout.numbering?.toModel == [2, 4, 0, 3, 1])
        #expect(try Self.links(container) == Self.seeded)
        #expect(try Self.authors(container).authors == ["Ada": "note 1"])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let note = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")).first { ($0.value(forKey: "title") as? String) == "note 2" })
            let box = NSManagedObject(entity: try #require(v3.entitiesByName["Box"]), insertInto: context)
            box.setValue(Int32(5), forKey: "size")
            box.setValue(note, forKey: "note")
            let tag = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Tag")).first)
            tag.setValue("red", forKey: "colour")
            try context.save()
        }
        try FSSupport.close(container)

        for compacted in [false, true] {
            container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle3))
            #expect(try Self.links(container) == Self.seeded, "compacted: \(compacted)")
            #expect(try Self.authors(container).authors == ["Ada": "note 1"])
            #expect(try Self.authors(container).pages == [3])
            let boxes = container.newBackgroundContext()
            let found = try boxes.performAndWait {
                try boxes.fetch(NSFetchRequest<NSManagedObject>(entityName: "Box")).map {
                    "\($0.value(forKey: "size") ?? "?") \(($0.value(forKey: "note") as? NSManagedObject)?.value(forKey: "title") ?? "-")"
                }
            }
            #expect(found == ["5 note 2"])
            if !compacted { try #require(FSSupport.fileStores(container).first).compact() }
            try FSSupport.close(container)
        }
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix))
    }

    /// A numbered file that a later version must rewrite is read through its numbering, and
    /// the new file numbers entities as that version does.
    @Test func aRewriteOfANumberedFileKeepsEverything() throws {
        let folder = try TemporaryFolder()
        let withDefault = Self.v2.replacingOccurrences(
            of: #"<attribute name="title" attributeType="String" defaultValueString=""/>"#,
            with: #"<attribute name="title" attributeType="String" defaultValueString=""/><attribute name="rank" attributeType="Integer 32" defaultValueString="4"/>"#)
        let versions = [("V1", Self.v1), ("V2", Self.v2), ("V3", withDefault)]
        let bundle2 = try S.bundle(in: folder.url, versions: versions, current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle2.appendingPathComponent("V1.xcdatamodel")))
        var container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle2))
        try Self.insertAuthor("Ada", favourite: "note 0", page: 1, into: container)
        try FSSupport.close(container)
        let numbered = try Self.identity(folder.storeURL)

        let v3 = try NSManagedObjectModel(modelFileAt: try S.bundle(in: folder.url, versions: versions, current: "V3"))
        container = try S.container(at: folder.storeURL, model: v3)
        #expect(try Self.identity(folder.storeURL)[0] != numbered[0], "an added attribute with a default takes a rewrite")
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix))
        #expect(try FileStore.readHeader(at: folder.storeURL.path).modelHash == v3.layoutHash.prefix(16))
        #expect(try Self.links(container) == Self.seeded)
        #expect(try Self.authors(container).authors == ["Ada": "note 0"])
        #expect(try Self.authors(container).pages == [1])
        try FSSupport.close(container)
    }

    /// History written to a numbered file names its entities by the file's numbering and
    /// reads back by the model's.
    @Test func historyInANumberedFileNamesTheRightEntities() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", Self.v2)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        // A version 5 file (a store that tracks history keeps it in the file's own format).
        try Self.seed(folder.storeURL, model: v1)
        var container = try HistorySupport.container(.file, at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        #expect(FileStore.effectiveLayout(header: try FileStore.readHeader(at: folder.storeURL.path).modelHash, path: folder.storeURL.path).numbering != nil)
        try Self.insertAuthor("Ada", favourite: "note 1", page: 2, into: container)
        let written = try HistorySupport.transactions(after: nil, in: container)
        try FSSupport.close(container)
        container = try HistorySupport.container(.file, at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        let read = try HistorySupport.transactions(after: nil, in: container)
        #expect(read == written)
        #expect(read.last?.changes.contains { $0.hasPrefix("insert Author") } == true)
        #expect(read.last?.changes.contains { $0.hasPrefix("insert Page") } == true)
        #expect(read.last?.changes.contains { $0.hasPrefix("update Note") } == true)
        try FSSupport.close(container)
    }

    /// A new sub-entity of an old entity, sorting first: its rows are the old entity's too
    /// (fetches include sub-entities), and old relationships to the old entity take them.
    @Test func aNewSubentityOfAnOldEntityKeepsTheFile() throws {
        let folder = try TemporaryFolder()
        let v2 = Self.v1 + #"<entity name="Memo" parentEntity="Note"><attribute name="urgency" optional="YES" attributeType="Integer 16"/></entity>"#
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", v2)], current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let before = try Self.identity(folder.storeURL)
        let model = try NSManagedObjectModel(modelFileAt: bundle)
        var container = try S.container(at: folder.storeURL, model: model)
        #expect(try Self.identity(folder.storeURL) == before)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let tags = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Tag"))
            let t1 = try #require(tags.first { ($0.value(forKey: "label") as? String) == "t1" })
            let memo = NSManagedObject(entity: try #require(model.entitiesByName["Memo"]), insertInto: context)
            memo.setValue("memo", forKey: "title")
            memo.setValue(Int16(2), forKey: "urgency")
            memo.setValue(t1, forKey: "lead")
            memo.mutableSetValue(forKey: "tags").insert(t1)
            try context.save()
        }
        try FSSupport.close(container)
        var expected = Self.seeded
        expected.notes["memo"] = ["lead t1", "t1"]
        expected.tags["t1"] = ["leads memo", "leads note 2", "memo", "note 0", "note 1"]
        for compacts in [true, false] {
            container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
            #expect(try Self.links(container) == expected, "a note fetch includes the memo, and the tag lists it")
            if compacts { try #require(FSSupport.fileStores(container).first).compact() }
            try FSSupport.close(container)
        }
    }

    /// A new many-to-many whose owning end is the old entity's (its name sorts first): old
    /// rows end before that column, read it as empty, and take links in later saves.
    @Test func aNewManyToManyOwnedByTheOldEntityKeepsTheFile() throws {
        let folder = try TemporaryFolder()
        let zeds = #"<relationship name="zeds" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Zed" inverseName="notes" inverseEntity="Zed"/>"#
        let v2 = #"""
            <entity name="Note">\#(Self.noteBody)\#(zeds)</entity><entity name="Tag">\#(Self.tagBody)</entity>
            <entity name="Zed"><attribute name="code" optional="YES" attributeType="String"/>
            <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="zeds" inverseEntity="Note"/></entity>
            """#
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", v2)], current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let before = try Self.identity(folder.storeURL)
        let model = try NSManagedObjectModel(modelFileAt: bundle)
        var container = try S.container(at: folder.storeURL, model: model)
        #expect(try Self.identity(folder.storeURL) == before)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let notes = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note"))
            #expect(notes.allSatisfy { $0.mutableSetValue(forKey: "zeds").isEmpty }, "old rows read the new end as empty")
            let zed = NSManagedObject(entity: try #require(model.entitiesByName["Zed"]), insertInto: context)
            zed.setValue("z", forKey: "code")
            for note in notes where (note.value(forKey: "title") as? String) != "note 2" { zed.mutableSetValue(forKey: "notes").insert(note) }
            try context.save()
        }
        try FSSupport.close(container)
        for compacts in [true, false] {
            container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
            #expect(try Self.links(container) == Self.seeded)
            let reader = container.newBackgroundContext()
            let linked = try reader.performAndWait {
                try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")).compactMap { note -> String? in
                    note.mutableSetValue(forKey: "zeds").isEmpty ? nil : note.value(forKey: "title") as? String
                }.sorted()
            }
            #expect(linked == ["note 0", "note 1"])
            if compacts { try #require(FSSupport.fileStores(container).first).compact() }
            try FSSupport.close(container)
        }
    }

    @Test func aRemovedEntityIsStillRewritten() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v2), ("V2", Self.v1)], current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let before = try Self.identity(folder.storeURL)
        let container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        #expect(try Self.identity(folder.storeURL)[0] != before[0], "a removed entity takes a rewrite")
        #expect(try Self.links(container) == Self.seeded)
        try FSSupport.close(container)
    }
}
