INSERT INTO "Mixed Case" ("Key", "va""lue") VALUES (1 + 2, 'a' || 'b')
