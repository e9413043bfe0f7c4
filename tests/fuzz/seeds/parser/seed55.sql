select	a
from	s	where	x	>	'é'