SET offset = -10
