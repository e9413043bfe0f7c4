set lower = 'ok'
